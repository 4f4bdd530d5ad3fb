import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Knex } from 'knex';
import { openTestDb } from '../helpers/db.js';
import { newMessage } from './new-message.js';
import { migrate } from '../../src/common/db/migrations.js';
import { relayerMigrations } from '../../src/relayer/db/migrations.js';
import type { Direction } from '../../src/relayer/config.js';
import type { MessageStatus } from '../../src/relayer/message/status.js';
import { isAllowed } from '../../src/relayer/message/transitions.js';
import { RelayerRepository, type MessageRow, type NewMessage } from '../../src/relayer/db/repository.js';

/**
 * The pipeline loops' change feed (RelayerRepository.dueChanged, migration 0004) on the test database: a page
 * is read in full once, then only the rows written since are read, and whatever the writes (this repository's,
 * another connection's, transactions committing out of order, retry times coming due), what a loop gets is
 * what a full read would give.
 */
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let schema: string;
let nextHash = 1;

const message = (block: number, over: Partial<NewMessage> = {}): NewMessage => newMessage(nextHash++, block, over);

beforeAll(async () => {
  testDb = await openTestDb();
  schema = testDb.schema('relayer_feed');
  await migrate(testDb.client.knex, schema, relayerMigrations);
});
afterAll(async () => {
  await testDb?.close();
});

/** A fresh repository over emptied tables (each test its own rows). */
async function freshRepo(): Promise<RelayerRepository> {
  await testDb.client.query('test.change_feed', (knex) => knex.raw(`truncate ${schema}.message cascade`));
  return new RelayerRepository(testDb.client, schema);
}

/** The statements the repository sends while `fn` runs, with the number of rows each answered. */
async function statements<T>(fn: () => Promise<T>): Promise<{ result: T; sent: { sql: string; rows: number }[] }> {
  const sent: { sql: string; rows: number }[] = [];
  const knex = testDb.client.knex;
  const onResponse = (response: unknown, q: { sql: string }) => {
    const rows = Array.isArray(response) ? response.length : ((response as { rows?: unknown[] })?.rows?.length ?? 0);
    if (q.sql.includes(`${schema}.`)) sent.push({ sql: q.sql, rows });
  };
  knex.on('query-response', onResponse);
  try {
    return { result: await fn(), sent };
  } finally {
    knex.off('query-response', onResponse);
  }
}

/**
 * Waits (up to 30 s) until the cluster's snapshot horizon has passed every row written so far, which is where
 * a read taken now puts the feed. On PostgreSQL the horizon is cluster-wide: a transaction another test file
 * holds open keeps it back, and the feed then reads again every row written since (correct, not minimal).
 * False when it stayed back that long.
 */
async function horizonPassedWrites(): Promise<boolean> {
  const until = Date.now() + 30_000;
  for (;;) {
    const result = await testDb.client.query('test.change_feed', (knex) =>
      knex.raw(
        `select (pg_snapshot_xmin(pg_current_snapshot()) > coalesce(max(change_xid), '0'::xid8)) as passed from ${schema}.message`,
      ),
    );
    if ((result as { rows: { passed: boolean }[] }).rows[0]!.passed) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The oracle: a full read of the due rows (retry time passed) of `statuses`, oldest first. */
function due(
  repo: RelayerRepository,
  direction: Direction,
  statuses: readonly MessageStatus[],
  limit: number,
): Promise<MessageRow[]> {
  return repo.read('test.due', (knex) =>
    repo
      .table(knex, 'message')
      .where({ direction })
      .whereIn('status', statuses as MessageStatus[])
      .where((w) => w.whereNull('retry_after').orWhere('retry_after', '<=', knex.fn.now()))
      .orderBy([{ column: 'sent_block_number' }, { column: 'message_nonce' }])
      .limit(limit)
      .select<MessageRow[]>('*'),
  );
}

const ids = (rows: MessageRow[]) => rows.map((r) => String(r.id));
const SENT: readonly MessageStatus[] = ['SENT'];
const CLAIMABLE: readonly MessageStatus[] = ['ANCHORED', 'FEE_UNDERPRICED'];

describe('relayer change feed', () => {
  it('behavior: after one full read, a write costs a loop one read of the changed rows only, and no write costs nothing', async () => {
    const repo = await freshRepo();
    await repo.storeMessages(
      Array.from({ length: 300 }, (_, i) => message(i)),
      { name: 'c', lastBlock: 300 },
    );
    const quiet = await horizonPassedWrites();
    const first = await statements(() => repo.dueChanged('L1_TO_L2', SENT, 100, 60_000));
    expect(first.result).toHaveLength(100);
    expect(first.sent).toHaveLength(1);
    expect(first.sent[0]!.sql).toMatch(/order by sent_block_number/);

    // Nothing written: no statement at all.
    expect((await statements(() => repo.dueChanged('L1_TO_L2', SENT, 100, 60_000))).sent).toHaveLength(0);

    // Three rows move on: one read of the feed, answering those three rows (one line when nothing changed).
    const moved = first.result.slice(0, 3);
    expect(
      (
        await repo.transitionMany(
          moved.map((m) => ({ id: m.id, patch: {} })),
          ['SENT'],
          'TRANSACTION_SIZE_COMPUTED',
        )
      ).size,
    ).toBe(3);
    const next = await statements(() => repo.dueChanged('L1_TO_L2', SENT, 100, 60_000));
    expect(next.sent).toHaveLength(1);
    expect(next.sent[0]!.sql).toMatch(/change_xid >=/);
    // Only the three rows, unless another test file's open transaction kept the horizon before the 300 writes
    // (the feed then correctly reads them again, bounded by MAX_FEED_ROWS).
    if (quiet) expect(next.sent[0]!.rows).toBe(3);
    else expect(next.sent[0]!.rows).toBeLessThanOrEqual(303);
    expect(ids(next.result)).toEqual(ids(first.result).slice(3));
    // The other statuses' loop sees them arrive, from the feed too once it has read its page.
    const sized = await repo.dueChanged('L1_TO_L2', ['TRANSACTION_SIZE_COMPUTED'], 100, 60_000);
    expect(ids(sized)).toEqual(ids(moved));
  });

  it('behavior: a write by another connection reaches the loop within maxAgeMs, and a full page drained below half is read again in order', async () => {
    const repo = await freshRepo();
    await repo.storeMessages(
      Array.from({ length: 40 }, (_, i) => message(i)),
      { name: 'c', lastBlock: 40 },
    );
    const page = await repo.dueChanged('L1_TO_L2', SENT, 10, 0);
    expect(page).toHaveLength(10);
    // An operator's SQL, not through the repository.
    await testDb.client.query('test.change_feed', (knex) =>
      knex(`${schema}.message`).whereIn('id', ids(page).slice(0, 2)).update({ status: 'EXCLUDED' }),
    );
    expect(ids(await repo.dueChanged('L1_TO_L2', SENT, 10, 0))).toEqual(ids(page).slice(2));
    // A row past the end of the page changes: it stays out (the rows between it and the page were never read).
    const beyond = (await due(repo, 'L1_TO_L2', SENT, 40)).at(-1)!;
    await testDb.client.query('test.change_feed', (knex) =>
      knex(`${schema}.message`).where({ id: beyond.id }).update({ failure_reason: 'touched' }),
    );
    expect(ids(await repo.dueChanged('L1_TO_L2', SENT, 10, 0))).toEqual(ids(page).slice(2));
    // Four more leave: six rows (below half of the full ten) and the rest of the backlog is read in, in order.
    await testDb.client.query('test.change_feed', (knex) =>
      knex(`${schema}.message`).whereIn('id', ids(page).slice(2, 6)).update({ status: 'EXCLUDED' }),
    );
    const refilled = await repo.dueChanged('L1_TO_L2', SENT, 10, 0);
    expect(ids(refilled)).toEqual(ids(await due(repo, 'L1_TO_L2', SENT, 10)));
    expect(ids(refilled).slice(0, 4)).toEqual(ids(page).slice(6));
  });

  it('behavior: a row whose retry time comes due is read without any write', async () => {
    const repo = await freshRepo();
    await repo.storeMessages([message(1), message(2)], { name: 'c', lastBlock: 2 });
    const [a, b] = await due(repo, 'L1_TO_L2', SENT, 10);
    await repo.transition(a!.id, ['SENT'], 'ANCHORED');
    await repo.transition(b!.id, ['SENT'], 'ANCHORED');
    await repo.transition(b!.id, ['ANCHORED'], 'FEE_UNDERPRICED', { retry_after: new Date(Date.now() + 400) });
    expect(ids(await repo.dueChanged('L1_TO_L2', CLAIMABLE, 10, 60_000))).toEqual([String(a!.id)]);
    await new Promise((r) => setTimeout(r, 500));
    expect(ids(await repo.dueChanged('L1_TO_L2', CLAIMABLE, 10, 60_000))).toEqual([String(a!.id), String(b!.id)]);
  });

  it.skipIf(process.env.DATABASE_HOST === undefined)(
    'behavior: a transaction that commits after a later one was read is still seen (PostgreSQL, two connections)',
    async () => {
      const repo = await freshRepo();
      await repo.storeMessages([message(1), message(2)], { name: 'c', lastBlock: 2 });
      const [a, b] = await due(repo, 'L1_TO_L2', SENT, 10);
      expect(await repo.dueChanged('L1_TO_L2', SENT, 10, 0)).toHaveLength(2);
      const knex = testDb.client.knex;
      // The first writer takes its transaction id and holds it open while a second commits and the loop reads.
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let wrote!: () => void;
      const written = new Promise<void>((r) => (wrote = r));
      const slow = knex.transaction(async (trx: Knex.Transaction) => {
        await trx(`${schema}.message`).where({ id: a!.id }).update({ status: 'EXCLUDED' });
        wrote();
        await held;
      });
      await written;
      await knex(`${schema}.message`).where({ id: b!.id }).update({ status: 'EXCLUDED' });
      expect(ids(await repo.dueChanged('L1_TO_L2', SENT, 10, 0))).toEqual([String(a!.id)]);
      release();
      await slow;
      expect(await repo.dueChanged('L1_TO_L2', SENT, 10, 0)).toEqual([]);
    },
  );

  it('behavior: under random inserts, moves, retry times and outside writes, every read is the start of what a full read gives, and at least half a page of it (or all of it)', async () => {
    const repo = await freshRepo();
    const LIMIT = 8;
    type Op =
      | { kind: 'insert'; blocks: number[] }
      | { kind: 'move'; pick: number; to: MessageStatus; outside: boolean }
      | { kind: 'retry'; pick: number; futureMs: number }
      | { kind: 'read' };
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('insert' as const),
        blocks: fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 12 }),
      }),
      fc.record({
        kind: fc.constant('move' as const),
        pick: fc.nat(),
        to: fc.constantFrom<MessageStatus>('SENT', 'ANCHORED', 'FEE_UNDERPRICED', 'PENDING', 'CLAIMED_SUCCESS'),
        outside: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('retry' as const), pick: fc.nat(), futureMs: fc.constantFrom(-1_000, 60_000) }),
      fc.record({ kind: fc.constant('read' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 25 }), async (ops: Op[]) => {
        for (const o of ops) {
          const all = await testDb.client.query('test.change_feed', (knex) =>
            knex(`${schema}.message`).orderBy('id').select<MessageRow[]>('*'),
          );
          if (o.kind === 'insert')
            await repo.storeMessages(
              o.blocks.map((b) => message(b)),
              { name: 'c', lastBlock: 1 },
            );
          else if (all.length > 0 && o.kind === 'move') {
            const row = all[o.pick % all.length]!;
            // Moves the transition table lacks are written from outside (as an operator's SQL would).
            if (o.outside || !isAllowed(row.status, o.to))
              await testDb.client.query('test.change_feed', (knex) =>
                knex(`${schema}.message`).where({ id: row.id }).update({ status: o.to }),
              );
            else await repo.transition(row.id, [row.status], o.to);
          } else if (all.length > 0 && o.kind === 'retry') {
            const row = all[o.pick % all.length]!;
            await repo.annotate(row.id, row.status, { retry_after: new Date(Date.now() + o.futureMs) });
          }
          for (const statuses of [SENT, CLAIMABLE]) {
            const got = await repo.dueChanged('L1_TO_L2', statuses, LIMIT, 0);
            const full = await due(repo, 'L1_TO_L2', statuses, LIMIT);
            // The page may stop short of the full read (rows past the end of its last full read), never differ.
            expect(ids(got)).toEqual(ids(full).slice(0, got.length));
            expect(got.length).toBeGreaterThanOrEqual(Math.min(full.length, LIMIT / 2));
            expect(got.map((r) => r.status)).toEqual(full.slice(0, got.length).map((r) => r.status));
          }
        }
      }),
      { numRuns: 25 },
    );
  });
});
