import { randomBytes } from 'node:crypto';
import type { DbClient } from '../../common/db/client.js';
import { filterNotFound } from '../errors.js';
import type { LogCriteria } from '../logs.js';

export type FilterKind = 'log' | 'block';

/** Rows touched by an update/delete: a number on pg, a result object on knex-pglite. */
const affected = (r: unknown): number => (typeof r === 'number' ? r : Number((r as { rowCount?: number }).rowCount ?? 0));

export interface FilterRow {
  id: string;
  kind: FilterKind;
  criteria: LogCriteria;
  nextBlock: bigint;
  /** Last poll older than a tenth of the time-to-live: an empty poll should refresh it. */
  stale: boolean;
}

/**
 * Filters live in Postgres, not in an upstream node, so every replica answers for every filter. The
 * cursor (next_block) only moves by compare-and-set: a poll reads it, fetches the entries from there to
 * the head, and stores the new cursor only if nobody moved it meanwhile; a poll that loses the race
 * starts over from the winner's cursor. So each entry is delivered exactly once, whichever replicas the
 * polls reach and however they overlap. Expiry uses the database clock, so replicas agree on it.
 */
export class FilterStore {
  private readonly table: string;

  constructor(
    private readonly db: DbClient,
    schema: string,
    private readonly ttlSeconds: number,
  ) {
    this.table = `${schema}.filters`;
  }

  async create(kind: FilterKind, criteria: LogCriteria, nextBlock: bigint): Promise<string> {
    const id = `0x${randomBytes(16).toString('hex')}`;
    await this.db.run((k) => k(this.table).insert({ id, kind, criteria: JSON.stringify(criteria), next_block: nextBlock.toString() }));
    return id;
  }

  /** The live filter, or "filter not found" (unknown, uninstalled, expired; or not of `kind`). */
  async get(id: string, kind?: FilterKind): Promise<FilterRow> {
    const key = id.toLowerCase();
    const row = (await this.db.run((k) =>
      k(this.table)
        .where({ id: key })
        .andWhere('last_poll_at', '>', k.raw(`now() - make_interval(secs => ?)`, [this.ttlSeconds]))
        .first('id', 'kind', 'criteria', 'next_block', k.raw(`last_poll_at < now() - make_interval(secs => ?) as stale`, [this.ttlSeconds / 10])),
    )) as { id: string; kind: FilterKind; criteria: LogCriteria | string; next_block: string; stale: boolean } | undefined;
    if (!row || (kind !== undefined && row.kind !== kind)) throw filterNotFound(id);
    const criteria = typeof row.criteria === 'string' ? (JSON.parse(row.criteria) as LogCriteria) : row.criteria;
    return { id: row.id, kind: row.kind, criteria, nextBlock: BigInt(row.next_block), stale: row.stale };
  }

  /** Moves the cursor from `expected` to `next` and marks the poll; false if another poll moved it first. */
  async advance(id: string, expected: bigint, next: bigint): Promise<boolean> {
    const n = await this.db.run((k) =>
      k(this.table)
        .where({ id, next_block: expected.toString() })
        .update({ next_block: next.toString(), last_poll_at: k.raw('now()') }),
    );
    return affected(n) === 1;
  }

  /** Keeps the filter alive (eth_getFilterLogs counts as a poll). */
  async touch(id: string): Promise<void> {
    await this.db.run((k) => k(this.table).where({ id }).update({ last_poll_at: k.raw('now()') }));
  }

  async remove(id: string): Promise<boolean> {
    const key = id.toLowerCase();
    const n = await this.db.run((k) =>
      k(this.table).where({ id: key }).andWhere('last_poll_at', '>', k.raw(`now() - make_interval(secs => ?)`, [this.ttlSeconds])).delete(),
    );
    // An expired row is gone for the caller already; clean it up too.
    await this.db.run((k) => k(this.table).where({ id: key }).delete());
    return affected(n) === 1;
  }

  async sweep(): Promise<number> {
    return affected(await this.db.run((k) => k(this.table).where('last_poll_at', '<=', k.raw(`now() - make_interval(secs => ?)`, [this.ttlSeconds])).delete()));
  }
}
