import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadDatabaseConfig } from '../../src/common/db/config.js';
import { createDbClient } from '../../src/common/db/client.js';
import { migrate } from '../../src/common/db/migrations.js';
import { RELAYER_SCHEMA, relayerMigrations } from '../../src/relayer/db/migrations.js';
import { RelayerRepository, type NewMessage } from '../../src/relayer/db/repository.js';
import { requeueMessages } from '../../src/relayer/db/requeue.js';
import { createL1L2AnchoringProcessor } from '../../src/relayer/pipeline/l1-to-l2.js';
import { processDatabase, type ProcessDatabase } from '../e2e/relayer/process.js';
import { useClaimChain, type ClaimChain } from './claim-chain.js';
import { l2stackArgs } from '../helpers/l2stack.js';

/**
 * `l2stack relayer requeue`: a message the relayer gave up on goes back into the pipeline with its
 * counters reset, the history says an operator did it, and it is then claimed on a real chain. The CLI
 * runs as a process against its own database (PGlite directory, or a fresh Postgres database).
 */
let c: ClaimChain;
const fixture = useClaimChain();
const cleanups: (() => Promise<unknown>)[] = [];
beforeAll(() => {
  c = fixture.chain;
});
afterAll(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, l2stackArgs('relayer', 'requeue', ...args), {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('requeue', () => {
  it('behavior: a NEEDS_MANUAL_INTERVENTION message is requeued with its counters reset, passes the anchoring check again and is claimed; the history shows the operator', async () => {
    const p = await c.pipeline({ MAX_NUMBER_OF_RETRIES: '3' });
    const [m] = await c.addMessages(1);
    // A real cause: three submissions counted (as after three fee bumps), so claiming gives the message up.
    await c.db(m!.id, { retries: 3, cycles: 1 });
    const lines = c.logLines.length;
    await p.claim();
    expect((await c.row(m!.id)).status).toBe('NEEDS_MANUAL_INTERVENTION');
    const given = c.logLines.slice(lines).filter((l) => l.includes('needs manual intervention'));
    expect(given.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual([
      `message ${m!.message_hash} needs manual intervention: 3 claim submissions without success: MAX_NUMBER_OF_RETRIES (3) reached`,
    ]);
    const out = await requeueMessages(c.repo, { hash: m!.message_hash });
    expect(out).toEqual({
      requeued: [
        {
          hash: m!.message_hash,
          direction: 'L1_TO_L2',
          from: 'NEEDS_MANUAL_INTERVENTION',
          to: 'TRANSACTION_SIZE_COMPUTED',
          retries: 3,
        },
      ],
      refused: [],
    });
    const r = await c.row(m!.id);
    expect([r.status, r.retries, r.cycles, r.bumps]).toEqual(['TRANSACTION_SIZE_COMPUTED', 0, 0, 0]);

    // Only statuses the relayer never leaves by itself move: a second requeue finds nothing to do.
    expect(await requeueMessages(c.repo, { hash: m!.message_hash })).toEqual({
      requeued: [],
      refused: [{ hash: m!.message_hash, direction: 'L1_TO_L2', status: 'TRANSACTION_SIZE_COMPUTED' }],
    });

    await createL1L2AnchoringProcessor(p.ctx)();
    expect((await c.row(m!.id)).status).toBe('ANCHORED');
    await p.claim();
    for (let i = 0; i < 50 && (await c.row(m!.id)).status === 'PENDING'; i++) {
      await p.receipts();
      await wait(100);
    }
    expect((await c.row(m!.id)).status).toBe('CLAIMED_SUCCESS');
    expect(await c.service.inboxL1L2MessageStatus(m!.message_hash)).toBe(2n);
    const history = await c.history(m!.id);
    const requeued = history.findIndex(
      (h) => h.status === 'TRANSACTION_SIZE_COMPUTED' && h.reason?.startsWith('requeued by operator'),
    );
    expect(history.slice(requeued - 1).map((h) => h.status)).toEqual([
      'NEEDS_MANUAL_INTERVENTION',
      'TRANSACTION_SIZE_COMPUTED',
      'ANCHORED',
      'PENDING',
      'CLAIMED_SUCCESS',
    ]);
    expect(history[requeued]!.reason).toBe(
      'requeued by operator (was NEEDS_MANUAL_INTERVENTION: 3 claim submissions without success: MAX_NUMBER_OF_RETRIES (3) reached)',
    );
  });

  it(
    'behavior: `l2stack relayer requeue` as a process: --status requeues every such message and prints each; a malformed hash or status exits 2 naming the problem',
    { timeout: 240_000 },
    async () => {
      const testDb = fixture.db;
      const database: ProcessDatabase = await processDatabase(testDb, 'requeue');
      cleanups.push(() => database.drop());
      const msg = (
        status: NewMessage['status'] | string,
        i: number,
        direction: 'L1_TO_L2' | 'L2_TO_L1' = 'L1_TO_L2',
      ) => ({
        message_hash: `0x${randomBytes(32).toString('hex')}`,
        direction,
        message_sender: `0x${'1'.repeat(40)}`,
        destination: `0x${'2'.repeat(40)}`,
        fee: '1',
        value: '0',
        message_nonce: String(i),
        calldata: '0x',
        contract_address: `0x${'3'.repeat(40)}`,
        sent_block_number: i,
        sent_tx_hash: `0x${'4'.repeat(64)}`,
        sent_log_index: 0,
        status,
        failure_reason: null,
      });
      const given = [
        msg('NEEDS_MANUAL_INTERVENTION', 1),
        msg('NEEDS_MANUAL_INTERVENTION', 2, 'L2_TO_L1'),
        msg('NON_EXECUTABLE', 3),
        msg('CLAIMED_SUCCESS', 4),
      ];
      const open = async () => createDbClient(loadDatabaseConfig(database.env), { poolMax: 1 });
      let db = await open();
      await db.query('test.requeue', (knex) => migrate(knex, RELAYER_SCHEMA, relayerMigrations));
      // Stored as SENT (what the listener does), then moved straight to the status under test.
      await new RelayerRepository(db, RELAYER_SCHEMA).storeMessages(
        given.map((g) => ({ ...g, status: 'SENT' as const })),
        { name: 'x', lastBlock: 4 },
      );
      for (const g of given)
        await db.query('test.requeue', (knex) =>
          knex(`${RELAYER_SCHEMA}.message`)
            .where({ message_hash: g.message_hash })
            .update({ status: g.status, retries: 7, proof: JSON.stringify(['0x01']) }),
        );
      await db.close(); // one process at a time on a PGlite directory

      const all = await cli(['--status', 'NEEDS_MANUAL_INTERVENTION'], database.env);
      expect([all.code, all.stderr]).toEqual([0, '']);
      expect(all.stdout.trim().split('\n')).toEqual([
        `requeued ${given[0]!.message_hash} L1_TO_L2: NEEDS_MANUAL_INTERVENTION -> TRANSACTION_SIZE_COMPUTED (retries 7 -> 0)`,
        `requeued ${given[1]!.message_hash} L2_TO_L1: NEEDS_MANUAL_INTERVENTION -> SENT (retries 7 -> 0)`,
        '2 message(s) requeued from NEEDS_MANUAL_INTERVENTION',
      ]);
      const malformed = await cli(['0xabc', '--direction', 'L2_TO_L1'], database.env);
      expect([malformed.code, malformed.stderr.split('\n')[0]]).toEqual([
        2,
        'l2stack relayer requeue: the message hash must be 0x followed by 64 hex digits, got "0xabc"',
      ]);
      // Input errors are found before the database is opened (a hash in another status: first test).
      const bad = await cli(['--status', 'CLAIMED_SUCCESS'], database.env);
      expect([bad.code, bad.stderr.split('\n')[0]]).toEqual([
        2,
        'l2stack relayer requeue: --status must be one of NEEDS_MANUAL_INTERVENTION, NON_EXECUTABLE, CLAIMED_REVERTED, ZERO_FEE, got "CLAIMED_SUCCESS" (FEE_UNDERPRICED is retried by itself; EXCLUDED follows your filters)',
      ]);

      db = await open();
      try {
        const rows = (await db.query('test.requeue', (knex) =>
          knex(`${RELAYER_SCHEMA}.message`)
            .orderBy('message_nonce')
            .select('message_hash', 'status', 'retries', 'proof'),
        )) as { status: string; retries: number; proof: unknown }[];
        expect(rows.map((r) => [r.status, r.retries])).toEqual([
          ['TRANSACTION_SIZE_COMPUTED', 0],
          ['SENT', 0],
          ['NON_EXECUTABLE', 7],
          ['CLAIMED_SUCCESS', 7],
        ]);
        expect(rows[1]!.proof).toBeNull(); // L2→L1 restarts at anchoring: the proof is rebuilt there
        const history = (await db.query('test.requeue', (knex) =>
          knex(`${RELAYER_SCHEMA}.message_status_history`)
            .where('reason', 'like', 'requeued by operator%')
            .select('status', 'reason'),
        )) as { status: string; reason: string }[];
        expect(history.map((h) => [h.status, h.reason])).toEqual([
          ['TRANSACTION_SIZE_COMPUTED', 'requeued by operator (was NEEDS_MANUAL_INTERVENTION)'],
          ['SENT', 'requeued by operator (was NEEDS_MANUAL_INTERVENTION)'],
        ]);
      } finally {
        await db.close();
      }
    },
  );
});
