/**
 * `npm run bench -- relayer-history`: what the message history (issue 25: a line per status change, written by
 * the same statement that moves the status, src/relayer/message/writer.ts) costs the database per claimed
 * message. The relayer's own rate is too noisy on a shared machine to bound a 5 % cost (±15 % run to run), so
 * this measures the database work alone, which is where the history's cost is: BENCH_HISTORY_MESSAGES
 * (default 3,000) L1→L2 messages stored and moved along a claim's path (SENT → TRANSACTION_SIZE_COMPUTED →
 * ANCHORED → PENDING → CLAIMED_SUCCESS) in batches of 100, as the loops move them, with the history on and
 * with it dropped by a trigger (as the relayer-start bench does), BENCH_HISTORY_ROUNDS (default 4) rounds
 * each, alternating (after one uncounted round of each), on a fresh schema each. Prints the database time per message
 * of each side and their difference as a share of the relayer's CPU per claim (BENCH_CLAIM_CPU_MS, default 2.9: the
 * median of the relayer-start runs on a quiet machine, docs/relayer.md "Start"). Embedded PGlite unless DATABASE_HOST
 * is set.
 */
import { createDbClient } from '../../src/common/db/client.js';
import { loadDatabaseConfig } from '../../src/common/db/config.js';
import { migrate } from '../../src/common/db/migrations.js';
import { relayerMigrations } from '../../src/relayer/db/migrations.js';
import type { MessageStatus } from '../../src/relayer/message/status.js';
import { RelayerRepository } from '../../src/relayer/db/repository.js';
import { applyTransition } from '../../src/relayer/message/writer.js';
import { newMessage } from '../relayer/new-message.js';

const MESSAGES = Number(process.env.BENCH_HISTORY_MESSAGES ?? 3_000);
const ROUNDS = Number(process.env.BENCH_HISTORY_ROUNDS ?? 4);
const CLAIM_CPU_MS = Number(process.env.BENCH_CLAIM_CPU_MS ?? 2.9);
const BATCH = 100;
const PATH: MessageStatus[] = ['SENT', 'TRANSACTION_SIZE_COMPUTED', 'ANCHORED', 'PENDING', 'CLAIMED_SUCCESS'];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * One side of one round: a fresh schema, the messages stored, then every batch moved along the path. Returns ms per
 * message.
 */
async function round(db: Awaited<ReturnType<typeof createDbClient>>, history: boolean, index: number): Promise<number> {
  const schema = `bench_history_${history ? 'on' : 'off'}_${index}`;
  await db.knex.raw(`drop schema if exists "${schema}" cascade`);
  await migrate(db.knex, schema, relayerMigrations);
  if (!history) {
    await db.knex.raw(
      `create function "${schema}".bench_no_history() returns trigger language plpgsql as $$ begin return null; end $$`,
    );
    await db.knex.raw(
      `create trigger bench_no_history before insert on "${schema}".message_status_history for each row execute function "${schema}".bench_no_history()`,
    );
  }
  const repo = new RelayerRepository(db, schema, 'bench history:1');
  const base = index * MESSAGES * 2 + (history ? MESSAGES : 0);
  const started = performance.now();
  for (let b = 0; b < MESSAGES; b += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, MESSAGES - b) }, (_, i) =>
      newMessage(base + b + i + 1, b + i + 1),
    );
    await repo.storeMessages(batch, { name: 'bench', lastBlock: b + BATCH });
  }
  const ids = ((await db.knex(`${schema}.message`).select('id').orderBy('id')) as { id: string }[]).map((r) => r.id);
  for (let s = 1; s < PATH.length; s++) {
    for (let b = 0; b < ids.length; b += BATCH) {
      const changes = ids
        .slice(b, b + BATCH)
        .map((id) => ({
          id,
          patch: PATH[s] === 'PENDING' ? { claim_tx_hash: `0x${'ab'.repeat(32)}`, claim_tx_nonce: id } : undefined,
        }));
      await db.query('bench.transition', (k) =>
        applyTransition(k, schema, changes, [PATH[s - 1]!], PATH[s]!, null, { actor: 'bench' }),
      );
    }
  }
  const ms = (performance.now() - started) / MESSAGES;
  const lines = Number(
    ((await db.knex(`${schema}.message_status_history`).count({ n: '*' })) as { n: string }[])[0]!.n,
  );
  if (lines !== (history ? MESSAGES * PATH.length : 0))
    throw new Error(
      `history ${history ? 'on' : 'off'}: ${lines} history lines, expected ${history ? MESSAGES * PATH.length : 0}`,
    );
  await db.knex.raw(`drop schema "${schema}" cascade`);
  return ms;
}

export async function main(): Promise<void> {
  const config = loadDatabaseConfig(process.env.DATABASE_HOST ? process.env : { DATABASE_PGLITE_DIR: 'memory://' });
  const db = await createDbClient(config);
  try {
    // One round of each side first, not counted: the first statements of a schema pay for planning and JIT.
    await round(db, true, ROUNDS);
    await round(db, false, ROUNDS);
    const on: number[] = [];
    const off: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Alternating, the first side swapped every round, so a drift of the machine falls on both.
      const order = r % 2 === 0 ? [true, false] : [false, true];
      for (const history of order) (history ? on : off).push(await round(db, history, r));
    }
    const cost = median(on) - median(off);
    console.log(
      `${MESSAGES} messages along ${PATH.join(' → ')} in batches of ${BATCH}, ${config.kind}, ${ROUNDS} rounds each side:\n` +
        `  history on:  ${on.map((x) => x.toFixed(3)).join(' / ')} ms per message (median ${median(on).toFixed(3)})\n` +
        `  history off: ${off.map((x) => x.toFixed(3)).join(' / ')} ms per message (median ${median(off).toFixed(3)})\n` +
        `  the history costs ${cost.toFixed(3)} ms per message (${((100 * cost) / median(off)).toFixed(1)} % of the database work), ` +
        `${((100 * cost) / CLAIM_CPU_MS).toFixed(1)} % of the relayer's ${CLAIM_CPU_MS} ms of CPU per claim (BENCH_CLAIM_CPU_MS)`,
    );
  } finally {
    await db.close();
  }
}
