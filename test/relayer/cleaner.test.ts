import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { migrate } from '../../src/common/db/migrations.js';
import { relayerMigrations } from '../../src/relayer/db/migrations.js';
import { MESSAGE_STATUSES, type MessageStatus } from '../../src/relayer/message/status.js';
import { RelayerRepository } from '../../src/relayer/db/repository.js';

/** The cleaner deletes old messages in final statuses only: never one that still needs work. */
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let repo: RelayerRepository;
let schema: string;

beforeAll(async () => {
  testDb = await openTestDb();
  schema = testDb.schema('relayer');
  await testDb.client.query('test.cleaner', (knex) => migrate(knex, schema, relayerMigrations));
  repo = new RelayerRepository(testDb.client, schema);
});

afterAll(async () => {
  await testDb?.close();
});

const WORK_LEFT: MessageStatus[] = ['SENT', 'TRANSACTION_SIZE_COMPUTED', 'ANCHORED', 'PENDING', 'FEE_UNDERPRICED'];

describe('cleaner', () => {
  it('behavior: deletes messages in final statuses older than the cut-off; keeps recent ones and every message that still needs work', async () => {
    let n = 0;
    const add = async (status: MessageStatus, daysAgo: number) => {
      n++;
      const hash = `0x${n.toString(16).padStart(64, '0')}`;
      await repo.storeMessages(
        [
          {
            message_hash: hash,
            direction: 'L1_TO_L2',
            message_sender: `0x${'1'.repeat(40)}`,
            destination: `0x${'2'.repeat(40)}`,
            fee: '1',
            value: '0',
            message_nonce: String(n),
            calldata: '0x',
            contract_address: `0x${'3'.repeat(40)}`,
            sent_block_number: n,
            sent_tx_hash: hash,
            sent_log_index: 0,
            status: 'SENT',
            failure_reason: null,
          },
        ],
        { name: 'c', lastBlock: n },
      );
      await testDb.client.query('test.cleaner', (knex) =>
        knex(`${schema}.message`)
          .where({ message_hash: hash })
          .update({ status, updated_at: knex.raw(`now() - make_interval(days => ?)`, [daysAgo]) }),
      );
      return `${status}:${daysAgo}`;
    };
    for (const status of MESSAGE_STATUSES) {
      await add(status, 30);
      await add(status, 1);
    }
    const deleted = await repo.deleteFinalOlderThan(14);
    const left = (await testDb.client.query('test.cleaner', (knex) =>
      knex(`${schema}.message`).select('status', knex.raw(`(now() - updated_at) > interval '14 days' as old`)),
    )) as { status: MessageStatus; old: boolean }[];
    const oldLeft = new Set(left.filter((r) => r.old).map((r) => r.status));
    const gone = MESSAGE_STATUSES.filter((s) => !oldLeft.has(s));
    expect(gone.sort()).toEqual([
      'ABANDONED',
      'CLAIMED_REVERTED',
      'CLAIMED_SUCCESS',
      'EXCLUDED',
      'NEEDS_MANUAL_INTERVENTION',
      'ZERO_FEE',
    ]);
    expect(deleted).toBe(gone.length);
    for (const s of WORK_LEFT) expect(oldLeft.has(s)).toBe(true);
    // Every recent message stays, whatever its status; their histories go with deleted messages only.
    expect(left.filter((r) => !r.old)).toHaveLength(MESSAGE_STATUSES.length);
    const orphans = await testDb.client.query('test.cleaner', (knex) =>
      knex(`${schema}.message_status_history as h`)
        .leftJoin(`${schema}.message as m`, 'm.id', 'h.message_id')
        .whereNull('m.id')
        .count({ c: '*' }),
    );
    expect(Number((orphans as { c: string }[])[0]!.c)).toBe(0);
  });
});
