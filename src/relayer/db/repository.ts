import type { Knex } from 'knex';
import type { DbClient } from '../../common/db/client.js';
import type { Direction } from '../config.js';
import type { MessageStatus } from './migrations.js';
import { hostname } from 'node:os';
import type { FinalizationRow, HistoryRow, MessagePatch, MessageRow, NewMessage } from './rows.js';
import { applyTransition, type StatusChange, type StatusChangeOptions } from './transitions.js';

export type { FinalizationRow, HistoryRow, MessagePatch, MessageRow, NewMessage } from './rows.js';

const json = (v: unknown) => JSON.stringify(v);

/** Rows read from the change feed at once; more (a burst, or a horizon held back) and the page is read in full. */
const MAX_FEED_ROWS = 2_000;

/** Orders non-negative integers given as decimal strings without leading zeros (bigint and numeric columns). */
const compareDecimal = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
/** The pipeline's order: block, then message nonce (as the page query orders). */
const compareRows = (a: MessageRow, b: MessageRow) =>
  compareDecimal(String(a.sent_block_number), String(b.sent_block_number)) || compareDecimal(String(a.message_nonce), String(b.message_nonce)) || compareDecimal(String(a.id), String(b.id));

/**
 * One loop's due rows (RelayerRepository.dueChanged), kept in memory between reads: the rows of its statuses
 * that were due when read, up to the end of its last full read (`last`) unless that read held them all
 * (`complete`); where the change feed stands (`horizon`); and the earliest retry time still to come.
 */
class DuePage {
  private readonly byId = new Map<string, MessageRow>();
  private sorted: MessageRow[] | undefined;
  /** Set by sealFullRead: whether the full read returned fewer rows than its limit, and its last row. */
  complete = false;
  private last: MessageRow | undefined;
  fullSize = 0;
  writes = 0;
  at = 0;

  private readonly statusSet: ReadonlySet<MessageStatus>;

  constructor(
    readonly direction: Direction,
    readonly statuses: readonly MessageStatus[],
    private readonly limit: number,
    public horizon: string,
    public nextDueAt: number | undefined,
  ) {
    this.statusSet = new Set(statuses);
  }

  put(row: MessageRow): void {
    this.byId.set(String(row.id), row);
    this.sorted = undefined;
  }

  sealFullRead(): void {
    this.fullSize = this.byId.size;
    this.complete = this.fullSize < this.limit;
    this.last = this.list().at(-1);
  }

  size(): number {
    return this.byId.size;
  }

  /** A row written since the last read that is no longer in the page's statuses. */
  drop(id: string): void {
    if (this.byId.delete(id)) this.sorted = undefined;
  }

  /** A row written since the last read: out of the page, back in if it is (still) one of ours and due. */
  apply(row: MessageRow, now: number): void {
    this.byId.delete(String(row.id));
    this.sorted = undefined;
    if (!this.statusSet.has(row.status)) return;
    const retryAt = row.retry_after ? new Date(row.retry_after).getTime() : undefined;
    if (retryAt !== undefined && retryAt > now) {
      this.nextDueAt = this.nextDueAt === undefined ? retryAt : Math.min(this.nextDueAt, retryAt);
      return;
    }
    // Past the end of a full read, earlier rows the page never held may lie between: left for the next full read.
    if (!this.complete && this.last && compareRows(row, this.last) > 0) return;
    this.byId.set(String(row.id), row);
  }

  /** The page in the pipeline's order, at most `limit` rows. */
  list(): MessageRow[] {
    this.sorted ??= [...this.byId.values()].sort(compareRows).slice(0, this.limit);
    return this.sorted;
  }
}

/** Claimable on the destination and not yet claimed: what counts as stuck once it lasts. */
export const STUCK_STATUSES: readonly MessageStatus[] = ['ANCHORED', 'FEE_UNDERPRICED', 'PENDING'];

/** Rows per INSERT of new messages: 2,000 × 14 columns stays well under PostgreSQL's 65,535 bind parameters. */
const MESSAGES_PER_INSERT = 2_000;

/** Data access of the relayer; every table qualified with the relayer's schema. */
export class RelayerRepository {
  /**
   * `actor`: who this repository's status changes are recorded as in the history; by default this relayer
   * instance (host and process), so the two instances of an HA pair are told apart.
   */
  constructor(readonly db: DbClient, readonly schema: string, readonly actor: string = `relayer ${hostname()}:${process.pid}`) {}

  /** Writes this repository made (counted once each settled, committed or not). */
  private writes = 0;
  private readonly pages = new Map<string, DuePage>();

  /** Every write through this repository (or a caller's own transaction on its tables) calls this once done. */
  noteWrite(): void {
    this.writes++;
  }

  private async write<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } finally {
      this.noteWrite();
    }
  }

  t(knex: Knex, table: string) {
    return knex(`${this.schema}.${table}`);
  }

  /**
   * Stores a window of MessageSent events and the listener's new resume point in one transaction, so a
   * restart neither skips nor duplicates a message. Known (hash, direction) pairs are left untouched.
   */
  async storeMessages(messages: NewMessage[], cursor: { name: string; lastBlock: number }): Promise<number> {
    if (messages.length === 0) {
      await this.db.run((knex) => this.setCursorIn(knex, cursor.name, cursor.lastBlock));
      return 0;
    }
    return this.write(() => this.db.run((knex) =>
      knex.transaction(async (trx) => {
        let inserted: { id: string; status: MessageStatus; failure_reason: string | null }[] = [];
        // In chunks, in the one transaction: a PostgreSQL statement takes at most 65,535 bind parameters, and a
        // log window of ~4,700 messages (14 columns each) in one INSERT was refused, retried forever.
        for (let at = 0; at < messages.length; at += MESSAGES_PER_INSERT) {
          const rows = await this.t(trx, 'message')
            .insert(messages.slice(at, at + MESSAGES_PER_INSERT))
            .onConflict(['message_hash', 'direction'])
            .ignore()
            .returning(['id', 'status', 'failure_reason']);
          if (rows.length > 0) {
            await this.t(trx, 'message_status_history').insert(rows.map((r) => ({ message_id: r.id, from_status: null, status: r.status, reason: r.failure_reason, actor: this.actor })));
          }
          inserted = inserted.concat(rows);
        }
        await this.setCursorIn(trx, cursor.name, cursor.lastBlock);
        return inserted.length;
      }),
    ));
  }

  async getCursor(name: string): Promise<number | undefined> {
    const row = await this.db.run((knex) => this.t(knex, 'cursor').where({ name }).first<{ last_block: string } | undefined>('last_block'));
    return row ? Number(row.last_block) : undefined;
  }

  async setCursorIn(knex: Knex, name: string, lastBlock: number): Promise<void> {
    await this.t(knex, 'cursor')
      .insert({ name, last_block: lastBlock, updated_at: knex.fn.now() })
      .onConflict('name')
      .merge(['last_block', 'updated_at']);
  }

  /**
   * Moves a message to `to` only if it is still in one of `from` (so two workers, or a worker and an
   * operator, never both act on one message), and records the change in the status history: one statement.
   */
  async transitionIn(knex: Knex, id: string, from: readonly MessageStatus[], to: MessageStatus, patch: MessagePatch = {}, reason: string | null = null, options: StatusChangeOptions = {}): Promise<boolean> {
    return (await applyTransition(knex, this.schema, [{ id, patch }], from, to, reason, { actor: this.actor, ...options })).size > 0;
  }

  transition(id: string, from: readonly MessageStatus[], to: MessageStatus, patch: MessagePatch = {}, reason: string | null = null): Promise<boolean> {
    return this.write(() => this.db.run((knex) => this.transitionIn(knex, id, from, to, patch, reason)));
  }

  /** transition() of many messages in one statement; returns the ids moved. */
  transitionMany(changes: readonly StatusChange[], from: readonly MessageStatus[], to: MessageStatus, reason: string | null = null): Promise<Set<string>> {
    if (changes.length === 0) return Promise.resolve(new Set());
    return this.write(() => this.db.run((knex) => applyTransition(knex, this.schema, changes, from, to, reason, { actor: this.actor })));
  }

  /**
   * Records a replacement (fee bump or cancellation) of the PENDING transaction `previousHash`, only if it
   * is still the message's current one.
   */
  async replaceClaimTx(id: string, previousHash: string, patch: MessagePatch & { failure_reason: string }, counts: { bump: boolean }): Promise<boolean> {
    return this.write(() => this.db.run(async (knex) => {
      const n: unknown = await this.t(knex, 'message')
        .where({ id, status: 'PENDING', claim_tx_hash: previousHash })
        .update({
          ...patch,
          bumps: counts.bump ? knex.raw('bumps + 1') : knex.raw('bumps'),
          retries: counts.bump ? knex.raw('retries + 1') : knex.raw('retries'),
          claim_tx_created_at: knex.fn.now(),
          updated_at: knex.fn.now(),
        });
      return Number(n) > 0;
    }));
  }

  /** Whether the message is still PENDING with this claim transaction (nothing replaced or undid it since a read). */
  async isPendingWith(id: string, claimTxHash: string): Promise<boolean> {
    const row = await this.db.run((knex) => this.t(knex, 'message').where({ id, status: 'PENDING', claim_tx_hash: claimTxHash }).first('id'));
    return row !== undefined;
  }

  /** Updates fields without changing the status (failure reason, retry time). */
  async annotate(id: string, status: MessageStatus, patch: MessagePatch & { failure_reason?: string | null }): Promise<void> {
    await this.write(() => this.db.run((knex) => this.t(knex, 'message').where({ id, status }).update({ ...patch, updated_at: knex.fn.now() })));
  }

  /** Messages of `direction` in `statuses`, oldest first, that are due (retry_after passed). */
  async due(direction: Direction, statuses: readonly MessageStatus[], limit: number, options: { maxRetries?: number } = {}): Promise<MessageRow[]> {
    return this.db.run((knex) => {
      const q = this.t(knex, 'message')
        .where({ direction })
        .whereIn('status', statuses as MessageStatus[])
        .where((w) => w.whereNull('retry_after').orWhere('retry_after', '<=', knex.fn.now()))
        .orderBy([{ column: 'sent_block_number' }, { column: 'message_nonce' }])
        .limit(limit);
      if (options.maxRetries !== undefined) q.where('retries', '<', options.maxRetries);
      return q.select<MessageRow[]>('*');
    });
  }

  /**
   * due() for a pipeline loop that runs every few hundred milliseconds, at a cost that follows the changes, not
   * the backlog. The loop's page is read once in full; after that each read asks only for the rows written
   * since (the change feed: migration 0004 stamps every written row with its transaction id) and applies them
   * to the page in memory. No query at all while nothing was written through this repository since the last
   * read, for at most `maxAgeMs` (writers elsewhere: another replica, an operator's requeue). The page is read
   * in full again only when it cannot be kept exact from changes: rows of these statuses came due (the
   * earliest retry time, read with the page, has passed), a full page drained below half (rows past its end
   * were never read), a page that held every due row grew past twice the limit, or more than MAX_FEED_ROWS
   * rows changed at once (a long transaction elsewhere holding
   * the snapshot horizon back makes the feed repeat itself, and this bounds what it costs).
   */
  async dueChanged(direction: Direction, statuses: readonly MessageStatus[], limit: number, maxAgeMs: number): Promise<MessageRow[]> {
    const key = `${direction}:${statuses.join(',')}:${limit}`;
    const page = this.pages.get(key);
    const now = Date.now();
    const dueAgain = page?.nextDueAt !== undefined && now >= page.nextDueAt;
    if (page && !dueAgain && page.writes === this.writes && now - page.at < maxAgeMs) return page.list();
    const writes = this.writes;
    if (page && !dueAgain && (await this.applyChanges(page))) {
      page.writes = writes;
      page.at = now;
      // A complete page grows with new rows; past twice the limit it is cut back to one full read.
      if (page.complete ? page.size() <= 2 * limit : page.size() >= page.fullSize / 2) return page.list();
    }
    const fresh = await this.readPage(direction, statuses, limit);
    fresh.writes = writes;
    fresh.at = now;
    this.pages.set(key, fresh);
    return fresh.list();
  }

  /** The oldest `limit` due rows of `statuses`, with the feed's horizon and the next retry time, in one statement. */
  private async readPage(direction: Direction, statuses: readonly MessageStatus[], limit: number): Promise<DuePage> {
    const t = `${this.schema}.message`;
    const marks = statuses.map(() => '?').join(', ');
    const result = await this.db.run((knex) =>
      knex.raw(
        `with h as (select pg_snapshot_xmin(pg_current_snapshot())::text as feed_horizon, ` +
          `(select min(retry_after) from ${t} where direction = ? and status in (${marks}) and retry_after > now()) as feed_next_due) ` +
          `select h.feed_horizon, h.feed_next_due, m.* from h left join lateral (select * from ${t} where direction = ? and status in (${marks}) ` +
          `and (retry_after is null or retry_after <= now()) order by sent_block_number, message_nonce limit ?) m on true`,
        [direction, ...statuses, direction, ...statuses, limit],
      ),
    );
    const rows = (result as { rows: (MessageRow & { feed_horizon: string; feed_next_due: Date | null })[] }).rows;
    const head = rows[0]!;
    const page = new DuePage(direction, statuses, limit, head.feed_horizon, head.feed_next_due ? new Date(head.feed_next_due).getTime() : undefined);
    for (const r of rows) {
      if (r.id === null) continue;
      const { feed_horizon: _h, feed_next_due: _n, ...row } = r;
      page.put(row);
    }
    page.sealFullRead();
    return page;
  }

  /**
   * Applies to `page` the rows written since its horizon. False when the page must be read in full instead
   * (too many changes at once).
   */
  private async applyChanges(page: DuePage): Promise<boolean> {
    const t = `${this.schema}.message`;
    const marks = page.statuses.map(() => '?').join(', ');
    // Every changed row by id and status, but whole only when it is in the page's statuses: a row that left
    // them only has to leave the page, and most changes a loop sees are other loops' (their rows carry
    // calldata, proofs and signed transactions that this loop would parse for nothing).
    const result = await this.db.run((knex) =>
      knex.raw(
        `with h as (select pg_snapshot_xmin(pg_current_snapshot())::text as feed_horizon) ` +
          `select h.feed_horizon, c.id as feed_id, m.* from h ` +
          `left join lateral (select id from ${t} where direction = ? and change_xid >= ?::xid8 limit ?) c on true ` +
          `left join ${t} m on m.id = c.id and m.status in (${marks})`,
        [page.direction, page.horizon, MAX_FEED_ROWS + 1, ...page.statuses],
      ),
    );
    const rows = (result as { rows: (MessageRow & { feed_horizon: string; feed_id: string | null })[] }).rows;
    if (rows.length > MAX_FEED_ROWS) return false;
    const now = Date.now();
    for (const r of rows) {
      if (r.feed_id === null) continue;
      if (r.id === null) {
        page.drop(String(r.feed_id));
        continue;
      }
      const { feed_horizon: _h, feed_id: _id, ...row } = r;
      page.apply(row, now);
    }
    page.horizon = rows[0]!.feed_horizon;
    return true;
  }

  async byHashes(direction: Direction, contractAddress: string, blocks: { from: number; to: number }): Promise<{ message_hash: string; message_nonce: string; sent_block_number: string }[]> {
    return this.db.run((knex) =>
      this.t(knex, 'message')
        .where({ direction, contract_address: contractAddress })
        .whereBetween('sent_block_number', [blocks.from, blocks.to])
        .orderBy('message_nonce')
        .select('message_hash', 'message_nonce', 'sent_block_number'),
    );
  }

  // --- finalizations (L2→L1 anchoring) -----------------------------------------------------------------

  async storeFinalizations(rows: Omit<FinalizationRow, 'id' | 'leaves'>[], cursor: { name: string; lastBlock: number }): Promise<void> {
    await this.write(() => this.db.run((knex) =>
      knex.transaction(async (trx) => {
        if (rows.length > 0) {
          await this.t(trx, 'finalization')
            .insert(rows.map((r) => ({ ...r, merkle_roots: json(r.merkle_roots), messaging_blocks: json(r.messaging_blocks) })))
            .onConflict(['contract_address', 'l1_tx_hash'])
            .ignore();
        }
        await this.setCursorIn(trx, cursor.name, cursor.lastBlock);
      }),
    ));
  }

  async finalizationCovering(contractAddress: string, l2Block: number): Promise<FinalizationRow | undefined> {
    return this.db.run((knex) =>
      this.t(knex, 'finalization')
        .where({ contract_address: contractAddress })
        .where('first_l2_block', '<=', l2Block)
        .where('final_l2_block', '>=', l2Block)
        .orderBy('id')
        .first<FinalizationRow | undefined>('*'),
    );
  }

  async saveLeaves(id: string, leaves: string[]): Promise<void> {
    await this.write(() => this.db.run((knex) => this.t(knex, 'finalization').where({ id }).update({ leaves: json(leaves) })));
  }

  // --- API and metrics ----------------------------------------------------------------------------------

  async findByHash(hash: string, direction?: Direction): Promise<MessageRow[]> {
    return this.db.run((knex) => {
      const q = this.t(knex, 'message').where({ message_hash: hash.toLowerCase() });
      if (direction) q.where({ direction });
      return q.orderBy('direction').select<MessageRow[]>('*');
    });
  }

  async list(filter: { status?: MessageStatus; direction?: Direction }, page: number, limit: number): Promise<{ rows: MessageRow[]; total: number }> {
    return this.db.run(async (knex) => {
      const where = (q: Knex.QueryBuilder) => {
        if (filter.status) q.where('status', filter.status);
        if (filter.direction) q.where('direction', filter.direction);
        return q;
      };
      const [{ count }] = (await where(this.t(knex, 'message')).count({ count: '*' })) as [{ count: string | number }];
      const rows = await where(this.t(knex, 'message'))
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
    const rows = await this.db.run((knex) =>
      this.t(knex, 'message_status_history')
        .whereIn('message_id', ids)
        .orderBy([{ column: 'message_id' }, { column: 'id' }])
        .select<HistoryRow[]>('message_id', 'from_status', 'status', 'at', 'reason', 'claim_tx_hash', 'claim_tx_nonce', 'signer', 'actor'),
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
  async stuck(seconds: number, limit: number, direction?: Direction): Promise<{ counts: Map<Direction, number>; oldest: Pick<MessageRow, 'id' | 'message_hash' | 'direction' | 'status' | 'anchored_at'>[] }> {
    return this.db.run(async (knex) => {
      const where = (q: Knex.QueryBuilder) =>
        (direction ? q.where({ direction }) : q).whereIn('status', STUCK_STATUSES as MessageStatus[]).where('anchored_at', '<', knex.raw(`now() - make_interval(secs => ?)`, [seconds]));
      const rows = (await where(this.t(knex, 'message')).select('direction').count({ count: '*' }).groupBy('direction')) as { direction: Direction; count: string | number }[];
      const oldest = limit === 0 ? [] : await where(this.t(knex, 'message')).orderBy('anchored_at').limit(limit).select('id', 'message_hash', 'direction', 'status', 'anchored_at');
      return { counts: new Map(rows.map((r) => [r.direction, Number(r.count)])), oldest };
    });
  }

  /** NON_EXECUTABLE messages of `direction` whose re-simulation is due (retry_after passed), the longest-waiting first. */
  async dueResimulations(direction: Direction, limit: number): Promise<MessageRow[]> {
    return this.db.run((knex) =>
      this.t(knex, 'message')
        .where({ direction, status: 'NON_EXECUTABLE' })
        .whereNotNull('retry_after')
        .where('retry_after', '<=', knex.fn.now())
        .orderBy('retry_after')
        .limit(limit)
        .select<MessageRow[]>('*'),
    );
  }

  async countsByStatus(): Promise<{ direction: Direction; status: MessageStatus; count: number }[]> {
    const rows = await this.db.run((knex) => this.t(knex, 'message').select('direction', 'status').count({ count: '*' }).groupBy('direction', 'status'));
    return (rows as { direction: Direction; status: MessageStatus; count: string | number }[]).map((r) => ({ ...r, count: Number(r.count) }));
  }

  /** The cleaner: final-status messages older than `days` (never one that still needs work). */
  async deleteFinalOlderThan(days: number): Promise<number> {
    // `returning` gives the deleted rows on both drivers (a bare delete's result differs between them).
    const rows = await this.write(() => this.db.run((knex) =>
      this.t(knex, 'message')
        .whereIn('status', ['CLAIMED_SUCCESS', 'CLAIMED_REVERTED', 'EXCLUDED', 'ZERO_FEE', 'NEEDS_MANUAL_INTERVENTION', 'ABANDONED'])
        .where('updated_at', '<', knex.raw(`now() - make_interval(days => ?)`, [days]))
        .delete(['id']),
    ));
    return (rows as unknown[]).length;
  }
}
