import type { Knex } from 'knex';
import type { CandleRow as StoredCandleRow } from '../read-model/candles.js';
import { hourOf, windowHours } from '../read-model/series.js';
import { epochMs } from '../read-model/source.js';
import { storedExplanation } from '../read-model/sources-json.js';
import type { PricingSettings } from './sources.js';
import type { Observation } from './pricing.js';
import type { SwapVolume } from './volumes.js';

/**
 * Write side of the hourly candles and of the price explanations (the indexer's transaction). A candle
 * row holds what its hour's observations make (open, high, low, close) plus what the read side needs for
 * the time-weighted average: the area under the price from `covered_from` to `last_at` (price × ms).
 */

/** The read side's candle row without its volume, which swap volumes add apart (recordCandles). */
type CandleRow = Omit<StoredCandleRow, 'volumeUsd'>;

export const chunks = <T>(rows: T[], n: number): T[][] =>
  Array.from({ length: Math.ceil(rows.length / n) }, (_, i) => rows.slice(i * n, (i + 1) * n));

/** Each token's newest candle: the hour a batch continues, or the close the next hour opens at. */
async function latestCandles(knex: Knex, schema: string, tokens: string[]): Promise<Map<string, CandleRow>> {
  const out = new Map<string, CandleRow>();
  for (const part of chunks(tokens, 1_000)) {
    const rows = (
      await knex.raw(
        `select distinct on (token) token, ${epochMs('hour')} as "hourMs", open, high, low, close, area,
           ${epochMs('covered_from')} as "coveredFromMs", ${epochMs('last_at')} as "lastAtMs"
         from ??.candles where token = any(?::text[]) order by token, hour desc`,
        [schema, part],
      )
    ).rows as CandleRow[];
    for (const r of rows) out.set(r.token, r);
  }
  return out;
}

/** Folds one token's observations (in block order) into its candles; older observations than the row's are skipped. */
function fold(start: CandleRow | undefined, observations: Observation[]): CandleRow[] {
  const out = new Map<number, CandleRow>();
  let cur = start && { ...start };
  for (const o of observations) {
    const t = o.at.getTime();
    // An older observation is a re-indexed block. One at the same time is applied: blocks of a fast chain
    // share a timestamp, and applying a re-indexed one again leaves the same close, high, low and area.
    if (cur && t < cur.lastAtMs) continue;
    const hour = hourOf(t);
    if (cur && cur.hourMs === hour) {
      cur.area += cur.close * (t - cur.lastAtMs);
      cur.high = Math.max(cur.high, o.price);
      cur.low = Math.min(cur.low, o.price);
      cur.close = o.price;
      cur.lastAtMs = t;
    } else {
      const open = cur ? cur.close : o.price;
      cur = {
        token: o.token,
        hourMs: hour,
        open,
        high: Math.max(open, o.price),
        low: Math.min(open, o.price),
        close: o.price,
        area: cur ? open * (t - hour) : 0,
        coveredFromMs: cur ? hour : t,
        lastAtMs: t,
      };
    }
    out.set(cur.hourMs, cur);
  }
  return [...out.values()];
}

/** USD volume per token and hour: each swapped amount times the token's price observed after its block. */
export function swapVolumesUsd(
  volumes: SwapVolume[],
  observations: Observation[],
): { token: string; hourMs: number; usd: number }[] {
  const priceAt = new Map<string, number>();
  for (const o of observations) if (o.block !== undefined) priceAt.set(`${o.token}|${o.block}`, o.price);
  const sums = new Map<string, { token: string; hourMs: number; usd: number }>();
  for (const v of volumes) {
    const price = priceAt.get(`${v.token}|${v.block}`);
    if (price === undefined) continue; // no price then: the swap adds 0
    const key = `${v.token}|${hourOf(v.at.getTime())}`;
    const s = sums.get(key) ?? { token: v.token, hourMs: hourOf(v.at.getTime()), usd: 0 };
    s.usd += v.amount * price;
    sums.set(key, s);
  }
  return [...sums.values()].filter((s) => Number.isFinite(s.usd) && s.usd > 0);
}

export async function recordCandles(
  knex: Knex,
  schema: string,
  observations: Observation[],
  volumes: { token: string; hourMs: number; usd: number }[],
): Promise<void> {
  const byToken = new Map<string, Observation[]>();
  for (const o of observations) {
    let list = byToken.get(o.token);
    if (!list) byToken.set(o.token, (list = []));
    list.push(o);
  }
  if (byToken.size > 0) {
    const latest = await latestCandles(knex, schema, [...byToken.keys()]);
    const rows = [...byToken].flatMap(([token, list]) => fold(latest.get(token), list));
    for (const part of chunks(rows, 1_000)) {
      await knex(`${schema}.candles`)
        .insert(
          part.map((r) => ({
            token: r.token,
            hour: new Date(r.hourMs),
            open: r.open,
            high: r.high,
            low: r.low,
            close: r.close,
            area: r.area,
            covered_from: new Date(r.coveredFromMs),
            last_at: new Date(r.lastAtMs),
          })),
        )
        .onConflict(['token', 'hour'])
        .merge(['open', 'high', 'low', 'close', 'area', 'covered_from', 'last_at']);
    }
  }
  if (volumes.length > 0) {
    const json = JSON.stringify(volumes.map((v) => ({ a: v.token, h: new Date(v.hourMs).toISOString(), u: v.usd })));
    await knex.raw(
      `update ??.candles as c set volume_usd = c.volume_usd + v.u
       from jsonb_to_recordset(?::jsonb) as v(a text, h timestamptz, u float8) where c.token = v.a and c.hour = v.h`,
      [schema, json],
    );
  }
}

/** Stores each token's latest explanation of the batch (what getTokenPriceSources serves), never an older one. */
export async function recordSources(
  knex: Knex,
  schema: string,
  observations: Observation[],
  settings: PricingSettings,
): Promise<void> {
  const latest = new Map<string, Observation>();
  for (const o of observations) {
    const l = latest.get(o.token);
    if (o.explained && (!l || l.at <= o.at)) latest.set(o.token, o);
  }
  const rows = [...latest.values()].map((o) => ({
    token: o.token,
    observed_at: o.at,
    block_number: o.block ?? null,
    detail: JSON.stringify(storedExplanation(o.price, o.explained!, settings)),
  }));
  for (const part of chunks(rows, 500)) {
    await knex(`${schema}.price_sources`)
      .insert(part)
      .onConflict('token')
      .merge(['observed_at', 'block_number', 'detail'])
      .whereRaw('price_sources.observed_at <= excluded.observed_at');
  }
}

/** Drops candles no window needs any more: all before the window's first hour but each token's newest. */
export async function pruneCandles(knex: Knex, schema: string, now: Date): Promise<void> {
  const first = new Date(windowHours(now.getTime()).first);
  await knex.raw(
    `delete from ??.candles as c where c.hour < ?
       and exists (select 1 from ??.candles q where q.token = c.token and q.hour <= ? and q.hour > c.hour)`,
    [schema, first, schema, first],
  );
}
