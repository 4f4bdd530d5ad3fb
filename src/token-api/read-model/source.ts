import type { DbClient } from '../../common/db/client.js';
import type { LoadedTokenRow } from './record.js';
import type { CandleRow } from './candles.js';
import type { StoredExplanation } from './sources-json.js';

/** An hourly price row: the last observation of its UTC hour. */
export interface PriceRow {
  token: string;
  hourMs: number;
  price: number;
}

/** A token's stored price explanation (indexer/candles-store.ts recordSources). */
export interface SourcesRow {
  token: string;
  detail: StoredExplanation;
}

/** Every row written after change number `since`, read in one snapshot, and the newest change number. */
export interface Delta {
  version: number;
  tokens: LoadedTokenRow[];
  prices: PriceRow[];
  sources: SourcesRow[];
  candles: CandleRow[];
}

// Timestamps also as epoch microseconds: the orderings must tell apart what PostgreSQL tells apart.
const us = (col: string) => `(extract(epoch from ${col}) * 1000000)::int8`;
/** A timestamp column in epoch ms as float8, which the drivers answer as a number (int8 comes as text). */
export const epochMs = (col: string) => `(${us(col)} / 1000)::float8`;
const TOKEN_SELECT = `address, name, symbol, decimals, total_supply, current_price, price_updated_at, last24h_variation,
  last24h_variation_abs, fdv, buys, sells, swaps, is_possible_spam, is_secure, list_logo,
  ${us('price_updated_at')} as price_updated_us, ${us('created_at')} as created_us, ${us('updated_at')} as updated_us, change_seq`;

/**
 * Reads the rows changed after `since` (all rows when `since` is -1). Both tables are read in one
 * repeatable-read transaction, so the delta is exactly the state after some indexer commit, never half of
 * one. The change numbers grow in commit order because the indexer is the single writer (advisory lock),
 * so "newer than the highest number held" is exactly "not held yet".
 */
export async function readDelta(db: DbClient, schema: string, since: number): Promise<Delta> {
  return db.query('token_api.read_delta', (knex) =>
    knex.transaction(
      async (trx) => {
        // A delta is a few rows of big tables: use the change_seq indexes even when statistics are stale
        // (PGlite has no autovacuum to refresh them, and a guessed 1/3 selectivity picks a full scan).
        if (since >= 0) await trx.raw('set local enable_seqscan = off');
        const tokens = (await trx.raw(`select ${TOKEN_SELECT} from ??.tokens where change_seq > ?`, [schema, since]))
          .rows as LoadedTokenRow[];
        const priceRows = (
          await trx.raw(
            `select token, ${epochMs('hour')} as "hourMs", price, change_seq from ??.prices where change_seq > ?`,
            [schema, since],
          )
        ).rows as (PriceRow & { change_seq: string })[];
        const sourceRows = (
          await trx.raw('select token, detail, change_seq from ??.price_sources where change_seq > ?', [schema, since])
        ).rows as { token: string; detail: StoredExplanation | string; change_seq: string }[];
        const candleRows = (
          await trx.raw(
            `select token, ${epochMs('hour')} as "hourMs", open, high, low, close, volume_usd as "volumeUsd", area,
               ${epochMs('covered_from')} as "coveredFromMs", ${epochMs('last_at')} as "lastAtMs", change_seq
             from ??.candles where change_seq > ?`,
            [schema, since],
          )
        ).rows as (CandleRow & { change_seq: string })[];
        let version = since;
        for (const rows of [tokens, priceRows, sourceRows, candleRows])
          for (const r of rows) version = Math.max(version, Number(r.change_seq));
        const sources = sourceRows.map(({ token, detail }) => ({
          token,
          detail: typeof detail === 'string' ? (JSON.parse(detail) as StoredExplanation) : detail,
        }));
        return { version: Math.max(version, 0), tokens, prices: priceRows, sources, candles: candleRows };
      },
      { isolationLevel: 'repeatable read', readOnly: true },
    ),
  );
}

/**
 * The highest committed change number: two index-only max() lookups, so a poll costs the same however
 * big the tables are (a delta read when nothing changed would scan, as the planner may not use the index).
 */
export async function readHead(db: DbClient, schema: string): Promise<number> {
  const row = (
    await db.query('token_api.read_head', (knex) =>
      knex.raw(
        `select greatest((select max(change_seq) from ??.tokens), (select max(change_seq) from ??.prices),
           (select max(change_seq) from ??.price_sources), (select max(change_seq) from ??.candles), 0) as head`,
        [schema, schema, schema, schema],
      ),
    )
  ).rows[0] as { head: string | null };
  return Number(row.head ?? 0);
}
