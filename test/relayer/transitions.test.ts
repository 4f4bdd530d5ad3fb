import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { newMessage } from './new-message.js';
import { migrate } from '../../src/common/db/migrations.js';
import { relayerMigrations } from '../../src/relayer/db/migrations.js';
import { MESSAGE_STATUSES, type MessageStatus } from '../../src/relayer/message/status.js';
import { RelayerRepository } from '../../src/relayer/db/repository.js';
import { ENTRY_STATUSES, TRANSITIONS, isAllowed } from '../../src/relayer/message/transitions.js';
import { TransitionNotAllowedError, applyTransition } from '../../src/relayer/message/writer.js';

/**
 * The state machine in one table (src/relayer/db/transitions.ts): every (from, to) pair of statuses is tried
 * against a real database through the one function that writes a status. An allowed move changes the row and
 * writes its history line in the same statement; any other is refused before anything is written.
 */
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let repo: RelayerRepository;
let schema: string;

beforeAll(async () => {
  testDb = await openTestDb();
  schema = testDb.schema('relayer');
  await migrate(testDb.client.knex, schema, relayerMigrations);
  repo = new RelayerRepository(testDb.client, schema, 'relayer test-host:1');
});
afterAll(async () => {
  await testDb?.close();
});

const FINAL: MessageStatus[] = ['CLAIMED_SUCCESS', 'EXCLUDED', 'ABANDONED'];

describe('status transitions', () => {
  it('behavior: every (from, to) pair: an allowed move writes the row and one history line (from, to, reason, claim tx, signer, actor); any other is refused and writes nothing', async () => {
    const pairs = MESSAGE_STATUSES.flatMap((from) => MESSAGE_STATUSES.map((to) => ({ from, to })));
    expect(pairs).toHaveLength(MESSAGE_STATUSES.length ** 2);
    let i = 1;
    const results: string[] = [];
    for (const { from, to } of pairs) {
      const index = i++;
      await repo.storeMessages([newMessage(index, index, { status: 'SENT' })], { name: 'c', lastBlock: index });
      const [row] = await repo.findByHash(newMessage(index, index).message_hash);
      const knex = testDb.client.knex;
      await knex(`${schema}.message`)
        .where({ id: row!.id })
        .update({
          status: from,
          claim_tx_hash: `0x${'ab'.repeat(32)}`,
          claim_tx_nonce: 7,
          claim_signer: `0x${'cd'.repeat(20)}`,
        });
      const linesBefore = await knex(`${schema}.message_status_history`)
        .where({ message_id: row!.id })
        .count<{ n: string }[]>({ n: '*' });
      let outcome: string;
      try {
        const moved = await testDb.client.query('test.transitions', (k) =>
          applyTransition(k, schema, [{ id: row!.id }], [from], to, `test ${from}>${to}`, { actor: 'admin' }),
        );
        outcome = moved.has(row!.id) ? 'moved' : 'not moved';
      } catch (err) {
        expect(err).toBeInstanceOf(TransitionNotAllowedError);
        // The error names both statuses, so the caller's bug is found from the message alone.
        expect([from, to, (err as Error).message]).toEqual([
          from,
          to,
          `status transition ${from} → ${to} is not in the relayer's transition table`,
        ]);
        outcome = 'refused';
      }
      const after = await knex(`${schema}.message`)
        .where({ id: row!.id })
        .first<{ status: string; failure_reason: string | null }>('status', 'failure_reason');
      const lines = await knex(`${schema}.message_status_history`)
        .where({ message_id: row!.id })
        .orderBy('id')
        .select('from_status', 'status', 'reason', 'claim_tx_hash', 'claim_tx_nonce', 'signer', 'actor');
      if (isAllowed(from, to)) {
        expect([from, to, outcome, after!.status]).toEqual([from, to, 'moved', to]);
        // A move writes one line; staying in a status (a re-evaluation) writes none.
        expect(lines.length - Number(linesBefore[0]!.n)).toBe(from === to ? 0 : 1);
        if (from !== to) {
          expect(lines.at(-1)).toEqual({
            from_status: from,
            status: to,
            reason: `test ${from}>${to}`,
            claim_tx_hash: `0x${'ab'.repeat(32)}`,
            claim_tx_nonce: '7',
            signer: `0x${'cd'.repeat(20)}`,
            actor: 'admin',
          });
        }
      } else {
        expect([from, to, outcome, after!.status]).toEqual([from, to, 'refused', from]);
        expect(lines).toHaveLength(Number(linesBefore[0]!.n));
      }
      results.push(`${from}>${to}:${outcome}`);
    }
    // The table and the enforcement agree in number: every listed pair moved, every other was refused.
    const listed = new Set(TRANSITIONS.map((t) => `${t.from}>${t.to}`));
    expect(results.filter((r) => r.endsWith(':moved')).length).toBe(listed.size);
  });

  it("behavior: the table has no way out of a final status, every status the relayer can park a message in has the operator's retry or abandon, and every status is reachable from where messages enter (SENT, EXCLUDED)", () => {
    for (const t of TRANSITIONS) expect(FINAL).not.toContain(t.from);
    for (const parked of [
      'NEEDS_MANUAL_INTERVENTION',
      'NON_EXECUTABLE',
      'CLAIMED_REVERTED',
      'FEE_UNDERPRICED',
      'ZERO_FEE',
    ] as const) {
      expect([
        parked,
        isAllowed(parked, 'TRANSACTION_SIZE_COMPUTED'),
        isAllowed(parked, 'SENT'),
        isAllowed(parked, 'ABANDONED'),
      ]).toEqual([parked, true, true, true]);
    }
    expect(isAllowed('PENDING', 'ABANDONED')).toBe(false);
    const reached = new Set<MessageStatus>(ENTRY_STATUSES);
    for (let grew = true; grew;) {
      grew = false;
      for (const t of TRANSITIONS) {
        if (reached.has(t.from) && !reached.has(t.to)) {
          reached.add(t.to);
          grew = true;
        }
      }
    }
    expect([...MESSAGE_STATUSES].filter((s) => !reached.has(s))).toEqual([]);
    for (const t of TRANSITIONS) expect(t.why.length).toBeGreaterThan(10);
  });

  it('behavior: a move that clears the claim transaction (a cycle ends) records the one it cleared', async () => {
    await repo.storeMessages([newMessage(901, 901)], { name: 'c', lastBlock: 901 });
    const [row] = await repo.findByHash(newMessage(901, 901).message_hash);
    await testDb.client
      .knex(`${schema}.message`)
      .where({ id: row!.id })
      .update({
        status: 'PENDING',
        claim_tx_hash: `0x${'12'.repeat(32)}`,
        claim_tx_nonce: 3,
        claim_signer: `0x${'34'.repeat(20)}`,
      });
    expect(
      await repo.transition(
        row!.id,
        ['PENDING'],
        'ANCHORED',
        { claim_tx_hash: null, claim_tx_nonce: null, claim_signer: null },
        'cycle ended',
      ),
    ).toBe(true);
    const after = (await repo.findByHash(row!.message_hash))[0]!;
    const line = (await repo.history([row!.id])).get(row!.id)!.at(-1)!;
    expect([
      after.claim_tx_hash,
      line.from_status,
      line.status,
      line.claim_tx_hash,
      line.claim_tx_nonce,
      line.signer,
      line.actor,
    ]).toEqual([
      null,
      'PENDING',
      'ANCHORED',
      `0x${'12'.repeat(32)}`,
      '3',
      `0x${'34'.repeat(20)}`,
      'relayer test-host:1',
    ]);
  });

  it('error: a move the table lacks names both statuses and writes nothing, even for a batch whose other source status is allowed', async () => {
    await repo.storeMessages([newMessage(900, 900)], { name: 'c', lastBlock: 900 });
    const [row] = await repo.findByHash(newMessage(900, 900).message_hash);
    await expect(
      testDb.client.query('test.transitions', (k) =>
        applyTransition(k, schema, [{ id: row!.id }], ['SENT', 'CLAIMED_SUCCESS'], 'ANCHORED', null),
      ),
    ).rejects.toThrow("status transition CLAIMED_SUCCESS → ANCHORED is not in the relayer's transition table");
    expect((await repo.findByHash(row!.message_hash))[0]!.status).toBe('SENT');
  });
});
