import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { DbClient } from '../../common/db/client.js';
import { filterNotFound } from '../errors.js';
import type { Filter as LogCriteria } from '../../../generated/rpc/methods.js';
import { perClientCapError, totalCapError, type FilterCountCaps } from './caps.js';
import { channelFor, memoFor, type FilterKind, type FilterMemo } from './memo.js';

export type { FilterKind } from './memo.js';

/** The database's clock `seconds` ago (expiry uses it, so replicas agree). */
const ago = (k: Knex, seconds: number) => k.raw('now() - make_interval(secs => ?)', [seconds]);

/** Rows touched by an update/delete: a number on pg, a result object on knex-pglite. */
const affected = (r: unknown): number =>
  typeof r === 'number' ? r : Number((r as { rowCount?: number }).rowCount ?? 0);

export interface FilterRow {
  id: string;
  kind: FilterKind;
  criteria: LogCriteria;
  nextBlock: bigint;
  /** Last poll older than a tenth of the time-to-live: an empty poll should refresh it. */
  stale: boolean;
}

/**
 * Filters live in Postgres, not in an upstream node, so every replica answers for every filter. The cursor (next_block)
 * only moves by compare-and-set: a poll reads it, fetches the entries from there to the head, and stores the new cursor
 * only if nobody moved it meanwhile; a poll that loses the race starts over from the winner's cursor. So each entry is
 * delivered exactly once, whichever replicas the polls reach and however they overlap. Expiry uses the database clock,
 * so replicas agree on it.
 */
export class FilterStore {
  private readonly table: string;
  private readonly pendingTable: string;
  private readonly watchersTable: string;
  /** Rows deleted by eth_uninstallFilter since the last VACUUM (see sweep). */
  private uninstalled = 0;
  /** What this process knows of filters without asking the database (memo.ts). */
  readonly memo: FilterMemo;
  /** RPC_FILTER_TTL_SECONDS: a filter not polled for this long has expired. */
  private readonly ttlSeconds: number;

  constructor(
    private readonly db: DbClient,
    schema: string,
    private readonly caps: FilterCountCaps,
  ) {
    this.table = `${schema}.filters`;
    this.pendingTable = `${schema}.pending_transactions`;
    this.watchersTable = `${schema}.pending_watchers`;
    this.ttlSeconds = caps.filterTtlSeconds;
    this.memo = memoFor(db, this.table, this.ttlSeconds);
  }

  /**
   * Stores a filter for `client` (the rate limiter's identity) unless the client or the endpoint already holds as many
   * live filters as allowed (-32005 naming the cap). Expired rows not swept yet do not count.
   */
  async create(kind: FilterKind, criteria: LogCriteria, nextBlock: bigint, client?: string): Promise<string> {
    // A Quantity, as the execution-apis type filter ids (uint): no leading zero digit.
    const id = `0x${randomBytes(16).toString('hex').replace(/^0+/, '') || '0'}`;
    const row = {
      id,
      kind,
      criteria: JSON.stringify(criteria),
      next_block: nextBlock.toString(),
      client: client ?? null,
    };
    const caps = this.caps;
    await this.db.query('rpc.filter_create_capped', (k) =>
      k.transaction(async (trx) => {
        // Creations take turns (per table, across replicas): two counting at once could both see room for one.
        await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [this.table]);
        const live = (await trx(this.table)
          .where('last_poll_at', '>', ago(trx, this.ttlSeconds))
          .first(
            trx.raw('count(*)::int as total'),
            trx.raw('count(*) filter (where client = ?)::int as mine', [client ?? null]),
          )) as { total: number; mine: number };
        if (client !== undefined && live.mine >= caps.maxFiltersPerClient) throw perClientCapError(caps, live.mine);
        if (live.total >= caps.maxFilters) throw totalCapError(caps, live.total);
        await trx(this.table).insert(row);
      }),
    );
    return id;
  }

  /** The live filter, or "filter not found" (unknown, uninstalled, expired; or not of `kind`). */
  async get(id: string, kind?: FilterKind): Promise<FilterRow> {
    const key = id.toLowerCase();
    const row = (await this.db.query('rpc.filter_get', (k) =>
      k(this.table)
        .where({ id: key })
        .andWhere('last_poll_at', '>', ago(k, this.ttlSeconds))
        .first(
          'id',
          'kind',
          'criteria',
          'next_block',
          k.raw(`last_poll_at < now() - make_interval(secs => ?) as stale`, [this.ttlSeconds / 10]),
        ),
    )) as
      { id: string; kind: FilterKind; criteria: LogCriteria | string; next_block: string; stale: boolean } | undefined;
    if (!row) this.memo.forget(key);
    if (!row || (kind !== undefined && row.kind !== kind)) throw filterNotFound(id);
    const criteria = typeof row.criteria === 'string' ? (JSON.parse(row.criteria) as LogCriteria) : row.criteria;
    const f = { id: row.id, kind: row.kind, criteria, nextBlock: BigInt(row.next_block), stale: row.stale };
    if (!f.stale)
      this.memo.remember({ id: f.id, kind: f.kind, criteria, nextBlock: f.nextBlock, confirmedAt: Date.now() });
    return f;
  }

  /** Moves the cursor from `expected` to `next` and marks the poll; false if another poll moved it first. */
  async advance(id: string, expected: bigint, next: bigint): Promise<boolean> {
    const n = await this.db.query('rpc.filter_advance', (k) =>
      k(this.table)
        .where({ id, next_block: expected.toString() })
        .update({ next_block: next.toString(), last_poll_at: k.raw('now()') }),
    );
    const moved = affected(n) === 1;
    const known = this.memo.get(id);
    if (moved && known) this.memo.remember({ ...known, nextBlock: next, confirmedAt: Date.now() });
    else if (!moved) this.memo.drop(id);
    return moved;
  }

  /** Keeps the filter alive (eth_getFilterLogs counts as a poll). */
  async touch(id: string): Promise<void> {
    await this.db.query('rpc.filter_touch', (k) =>
      k(this.table)
        .where({ id })
        .update({ last_poll_at: k.raw('now()') }),
    );
  }

  async remove(id: string): Promise<boolean> {
    const key = id.toLowerCase();
    const n = await this.db.query('rpc.filter_remove', (k) =>
      k(this.table).where({ id: key }).andWhere('last_poll_at', '>', ago(k, this.ttlSeconds)).delete(),
    );
    // An expired row is gone for the caller already; clean it up too.
    const expired = await this.db.query('rpc.filter_remove_expired', (k) => k(this.table).where({ id: key }).delete());
    // Every process forgets it now (this one directly, others through LISTEN: memo.ts).
    this.memo.forget(key);
    if (this.db.kind !== 'pglite')
      await this.db.query('rpc.filter_notify_removed', (k) =>
        k.raw('select pg_notify(?, ?)', [channelFor(this.table), key]),
      );
    this.uninstalled += affected(n) + affected(expired);
    return affected(n) === 1;
  }

  /**
   * Records pending-transaction hashes a replica saw arrive at the node (filters/pending.ts), or a gap (null: hashes
   * may have been missed). One insert at a time across replicas (advisory lock), so seqs become visible in order and a
   * cursor never passes a seq that commits later. A hash another replica recorded already is skipped.
   */
  async recordPending(hashes: readonly string[] | null): Promise<void> {
    const rows = hashes === null ? [{ hash: null }] : hashes.map((hash) => ({ hash: hash.toLowerCase() }));
    if (rows.length === 0) return;
    await this.db.query('rpc.filter_record_pending', (k) =>
      k.transaction(async (trx) => {
        await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [this.pendingTable]);
        await trx(this.pendingTable).insert(rows).onConflict('hash').ignore();
      }),
    );
  }

  /** A replica's watch is alive (filters/pending.ts). */
  async beatPending(watcher: string): Promise<void> {
    await this.db.query('rpc.filter_beat_pending', (k) =>
      k(this.watchersTable)
        .insert({ id: watcher, beat_at: k.raw('now()') })
        .onConflict('id')
        .merge(),
    );
  }

  /**
   * Whether live pending-transaction filters wait with no other watch alive (none beat within `withinMs`): then hashes
   * may have reached the node unseen (every watching replica died) and a gap must be recorded.
   */
  async pendingUnwatched(watcher: string, withinMs: number): Promise<boolean> {
    const row = (await this.db.query('rpc.filter_pending_unwatched', (k) =>
      k
        .select(
          k.raw(
            `exists (select 1 from ${this.table} where kind = 'pending' and last_poll_at > now() - make_interval(secs => ?)) as waiting`,
            [this.ttlSeconds],
          ),
          k.raw(
            `exists (select 1 from ${this.watchersTable} where id <> ? and beat_at > now() - make_interval(secs => ?)) as watched`,
            [watcher, withinMs / 1000],
          ),
        )
        .first(),
    )) as { waiting: boolean; watched: boolean };
    return row.waiting && !row.watched;
  }

  /** The seq a pending-transaction filter made now starts from (the next one to be recorded). */
  async pendingCursor(): Promise<bigint> {
    const row = (await this.db.query('rpc.filter_pending_cursor', (k) =>
      k(this.pendingTable).first(k.raw('coalesce(max(seq), 0) as top')),
    )) as { top: string | number };
    return BigInt(row.top) + 1n;
  }

  /** Recorded hashes from seq `from` on, oldest first (hash null: a gap). */
  async pendingFrom(from: bigint, limit: number): Promise<{ seq: bigint; hash: string | null }[]> {
    const rows = (await this.db.query('rpc.filter_pending_from', (k) =>
      k(this.pendingTable).where('seq', '>=', from.toString()).orderBy('seq').limit(limit).select('seq', 'hash'),
    )) as { seq: string; hash: string | null }[];
    return rows.map((r) => ({ seq: BigInt(r.seq), hash: r.hash }));
  }

  /**
   * Deletes expired filters. Embedded PGlite has neither autovacuum nor a checkpointer: the space of deleted rows was
   * never reused and WAL segments were never recycled, so every round of filters grew the database (in memory: this
   * process's RSS) by about twice the size of its rows, measured +200 MiB per 100 filters of 1 MB. VACUUM makes the
   * space reusable (and truncates empty pages), CHECKPOINT lets the WAL be recycled; with both, rounds stay flat.
   * Postgres's own background workers do this there.
   */
  async sweep(): Promise<number> {
    const n = affected(
      await this.db.query('rpc.filter_sweep', (k) =>
        k(this.table).where('last_poll_at', '<=', ago(k, this.ttlSeconds)).delete(),
      ),
    );
    // A live filter was polled within the TTL, and got every hash recorded before that poll.
    await this.db.query('rpc.filter_sweep_pending', (k) =>
      k(this.pendingTable)
        .where('seen_at', '<', ago(k, 2 * this.ttlSeconds))
        .delete(),
    );
    await this.db.query('rpc.filter_sweep_watchers', (k) =>
      k(this.watchersTable)
        .where('beat_at', '<', ago(k, 2 * this.ttlSeconds))
        .delete(),
    );
    if (this.db.kind === 'pglite' && n + this.uninstalled > 0) {
      this.uninstalled = 0;
      await this.db.query('rpc.filter_vacuum', async (k) => {
        await k.raw(`vacuum ${this.table}`);
        await k.raw('checkpoint');
      });
    }
    return n;
  }
}
