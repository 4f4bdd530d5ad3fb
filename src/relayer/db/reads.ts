import type { Knex } from 'knex';
import type { DbClient } from '../../common/db/client.js';
import type { Direction } from '../config.js';
import { Status, type MessageStatus } from '../message/status.js';
import { STUCK } from '../message/transitions.js';
import type { FinalizationRow, HistoryRow, MessageRow } from './rows.js';

/**
 * What the relayer reads from its tables: the pipeline's lookups, the API's and the metrics'. Nothing here writes;
 * RelayerRepository adds the writes (and the change feed, which follows them).
 */
export class RelayerReads {
  constructor(
    protected readonly db: DbClient,
    readonly schema: string,
  ) {}

  /** A table of the relayer's schema, in a read()'s or a write()'s query. */
  table(knex: Knex, name: string) {
    return knex(`${this.schema}.${name}`);
  }

  /** Runs `fn` as the read-only query `name` (a write goes through RelayerRepository.write, which wakes the loops). */
  read<T>(name: string, fn: (knex: Knex) => Promise<T>): Promise<T> {
    return this.db.query(name, fn);
  }

  async getCursor(name: string): Promise<number | undefined> {
    const row = await this.db.query('relayer.get_cursor', (knex) =>
      this.table(knex, 'cursor').where({ name }).first<{ last_block: string } | undefined>('last_block'),
    );
    return row ? Number(row.last_block) : undefined;
  }

  /** Whether the message is still PENDING with this claim transaction (nothing replaced or undid it since a read). */
  async isPendingWith(id: string, claimTxHash: string): Promise<boolean> {
    const row = await this.db.query('relayer.is_pending_with', (knex) =>
      this.table(knex, 'message').where({ id, status: Status.PENDING, claim_tx_hash: claimTxHash }).first('id'),
    );
    return row !== undefined;
  }

  async byHashes(
    direction: Direction,
    contractAddress: string,
    blocks: { from: number; to: number },
  ): Promise<{ message_hash: string; message_nonce: string; sent_block_number: string }[]> {
    return this.db.query('relayer.by_hashes', (knex) =>
      this.table(knex, 'message')
        .where({ direction, contract_address: contractAddress })
        .whereBetween('sent_block_number', [blocks.from, blocks.to])
        .orderBy('message_nonce')
        .select('message_hash', 'message_nonce', 'sent_block_number'),
    );
  }

  /**
   * For each of the L2 blocks, the finalization of `contractAddress` that covers it (the first recorded, as
   * several may after a reorg on L1), in one statement: each distinct row once, by id; a block no
   * finalization covers yet adds none (finalizationFor picks a message's). One probe of the range index per
   * block inside the database, where a lookup per message cost a round trip each: 300 messages sent before
   * their finalization was indexed kept PGlite's one connection busy for ~0.7 s per pass at start-up.
   */
  async finalizationsCovering(contractAddress: string, l2Blocks: readonly number[]): Promise<FinalizationRow[]> {
    const blocks = [...new Set(l2Blocks)];
    if (blocks.length === 0) return [];
    const t = `${this.schema}.finalization`;
    return this.db.query('relayer.finalizations_covering', async (knex) => {
      const result = await knex.raw(
        `select * from ${t} where id in (select (select f.id from ${t} f where f.contract_address = ? and f.first_l2_block <= b and f.final_l2_block >= b ` +
          `order by f.id limit 1) from unnest(?::bigint[]) as b) order by id`,
        [contractAddress, `{${blocks.map((b) => String(Math.trunc(b))).join(',')}}`],
      );
      return (result as { rows: FinalizationRow[] }).rows;
    });
  }

  // --- API and metrics ----------------------------------------------------------------------------------

  async findByHash(hash: string, direction?: Direction): Promise<MessageRow[]> {
    return this.db.query('relayer.find_by_hash', (knex) => {
      const q = this.table(knex, 'message').where({ message_hash: hash.toLowerCase() });
      if (direction) q.where({ direction });
      return q.orderBy('direction').select<MessageRow[]>('*');
    });
  }

  async list(
    filter: { status?: MessageStatus; direction?: Direction },
    page: number,
    limit: number,
  ): Promise<{ rows: MessageRow[]; total: number }> {
    return this.db.query('relayer.list', async (knex) => {
      const where = (q: Knex.QueryBuilder) => {
        if (filter.status) q.where('status', filter.status);
        if (filter.direction) q.where('direction', filter.direction);
        return q;
      };
      const [{ count }] = (await where(this.table(knex, 'message')).count({ count: '*' })) as [
        { count: string | number },
      ];
      const rows = await where(this.table(knex, 'message'))
        .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'message_hash' }, { column: 'direction' }])
        .offset((page - 1) * limit)
        .limit(limit)
        .select<MessageRow[]>('*');
      return { rows, total: Number(count) };
    });
  }

  async history(ids: string[]): Promise<Map<string, HistoryRow[]>> {
    const out = new Map<string, HistoryRow[]>();
    if (ids.length === 0) return out;
    const rows = await this.db.query('relayer.history', (knex) =>
      this.table(knex, 'message_status_history')
        .whereIn('message_id', ids)
        .orderBy([{ column: 'message_id' }, { column: 'id' }])
        .select<HistoryRow[]>(
          'message_id',
          'from_status',
          'status',
          'at',
          'reason',
          'claim_tx_hash',
          'claim_tx_nonce',
          'signer',
          'actor',
        ),
    );
    for (const r of rows) {
      const list = out.get(String(r.message_id)) ?? [];
      list.push(r);
      out.set(String(r.message_id), list);
    }
    return out;
  }

  /**
   * Messages claimable on their destination (ANCHORED, FEE_UNDERPRICED, or PENDING with its claim unconfirmed)
   * for more than `seconds` since they were anchored: how many per direction, and the oldest `limit` of them.
   */
  async stuck(
    seconds: number,
    limit: number,
    direction?: Direction,
  ): Promise<{
    counts: Map<Direction, number>;
    oldest: Pick<MessageRow, 'id' | 'message_hash' | 'direction' | 'status' | 'anchored_at'>[];
  }> {
    return this.db.query('relayer.stuck', async (knex) => {
      const where = (q: Knex.QueryBuilder) =>
        (direction ? q.where({ direction }) : q)
          .whereIn('status', STUCK)
          .where('anchored_at', '<', knex.raw(`now() - make_interval(secs => ?)`, [seconds]));
      const rows = (await where(this.table(knex, 'message'))
        .select('direction')
        .count({ count: '*' })
        .groupBy('direction')) as { direction: Direction; count: string | number }[];
      const oldest =
        limit === 0
          ? []
          : await where(this.table(knex, 'message'))
              .orderBy('anchored_at')
              .limit(limit)
              .select('id', 'message_hash', 'direction', 'status', 'anchored_at');
      return { counts: new Map(rows.map((r) => [r.direction, Number(r.count)])), oldest };
    });
  }

  /**
   * NON_EXECUTABLE messages of `direction` whose re-simulation is due (retry_after passed), the longest-waiting first.
   */
  async dueResimulations(direction: Direction, limit: number): Promise<MessageRow[]> {
    return this.db.query('relayer.due_resimulations', (knex) =>
      this.table(knex, 'message')
        .where({ direction, status: Status.NON_EXECUTABLE })
        .whereNotNull('retry_after')
        .where('retry_after', '<=', knex.fn.now())
        .orderBy('retry_after')
        .limit(limit)
        .select<MessageRow[]>('*'),
    );
  }

  async countsByStatus(): Promise<{ direction: Direction; status: MessageStatus; count: number }[]> {
    const rows = await this.db.query('relayer.counts_by_status', (knex) =>
      this.table(knex, 'message').select('direction', 'status').count({ count: '*' }).groupBy('direction', 'status'),
    );
    return (rows as { direction: Direction; status: MessageStatus; count: string | number }[]).map((r) => ({
      ...r,
      count: Number(r.count),
    }));
  }
}
