import type { DbClient } from '../../common/db/client.js';
import type { Direction } from '../config.js';
import type { MessageStatus } from '../message/status.js';
import type { MessageRow } from './rows.js';

/** Rows read from the change feed at once; more (a burst, or a horizon held back) and the page is read in full. */
const MAX_FEED_ROWS = 2_000;

/** Orders non-negative integers given as decimal strings without leading zeros (bigint and numeric columns). */
const compareDecimal = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
/** The pipeline's order: block, then message nonce (as the page query orders). */
const compareRows = (a: MessageRow, b: MessageRow) =>
  compareDecimal(String(a.sent_block_number), String(b.sent_block_number)) ||
  compareDecimal(String(a.message_nonce), String(b.message_nonce)) ||
  compareDecimal(String(a.id), String(b.id));

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

/** The due rows of each pipeline loop, kept exact from the change feed (RelayerRepository.dueChanged). */
export class ChangeFeed {
  private readonly pages = new Map<string, DuePage>();

  constructor(
    private readonly db: DbClient,
    private readonly schema: string,
  ) {}

  /**
   * The due rows (retry time passed, oldest first) for a pipeline loop that runs every few hundred ms, at a cost that
   * follows the changes, not the backlog. The loop's page is read once in full; after that each read asks only for the
   * rows written since (the change feed: migration 0004 stamps every written row with its transaction id) and applies
   * them to the page in memory. No query at all while nothing was written through the repository since the last
   * read (`writes`: the repository's count of its own writes), for at most `maxAgeMs` (writers elsewhere: another
   * replica, an operator's requeue). The page is read in full again only when it cannot be kept exact from changes:
   * rows of these statuses came due (the earliest retry time, read with the page, has passed), a full page drained
   * below half (rows past its end were never read), a page that held every due row grew past twice the limit, or more
   * than MAX_FEED_ROWS rows changed at once (a long transaction elsewhere holding
   * the snapshot horizon back makes the feed repeat itself, and this bounds what it costs).
   */
  async due(
    direction: Direction,
    statuses: readonly MessageStatus[],
    limit: number,
    maxAgeMs: number,
    writes: number,
  ): Promise<MessageRow[]> {
    const key = `${direction}:${statuses.join(',')}:${limit}`;
    const page = this.pages.get(key);
    const now = Date.now();
    const dueAgain = page?.nextDueAt !== undefined && now >= page.nextDueAt;
    if (page && !dueAgain && page.writes === writes && now - page.at < maxAgeMs) return page.list();
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
    const result = await this.db.query('relayer.read_page', (knex) =>
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
    const page = new DuePage(
      direction,
      statuses,
      limit,
      head.feed_horizon,
      head.feed_next_due ? new Date(head.feed_next_due).getTime() : undefined,
    );
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
    const result = await this.db.query('relayer.apply_changes', (knex) =>
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
}
