import type { components } from '../../../generated/token-api/schema.js';
import { hourlySeries, HOUR_MS, type HourlyRows } from './series.js';

/**
 * The hourly candles getTokenCandles serves, built from the token's hourly price rows (the same series
 * getTokenPrices serves, so every `close` is that hour's point) and the indexer's candle rows.
 */

/** A candle row as the indexer stores it (indexer/candles-store.ts); times in epoch ms. */
export interface CandleRow {
  token: string;
  hourMs: number;
  open: number;
  high: number;
  low: number;
  close: number;
  volumeUsd: number;
  /** Integral of the price over [coveredFromMs, lastAtMs], price × ms. */
  area: number;
  coveredFromMs: number;
  lastAtMs: number;
}

/** One candle as getTokenCandles answers it. */
export type Candle = components['schemas']['Candle'];

const MINUTE_MS = 60_000;

/**
 * The time-weighted average of an hour with observations: the stored area, plus the close held from the
 * last observation to the end of the hour (for the current hour, to the start of the current minute, or
 * the last observation when later), over the time covered.
 */
export function twapOf(row: CandleRow, now: number): number {
  const end = Math.max(Math.min(row.hourMs + HOUR_MS, Math.floor(now / MINUTE_MS) * MINUTE_MS), row.lastAtMs);
  const span = end - row.coveredFromMs;
  if (!(span > 0)) return row.close;
  return (row.area + row.close * (end - row.lastAtMs)) / span;
}

/** The candles at `now`: one per point of the hourly series, flat (and without volume) for hours without a row. */
export function candlesAt(
  prices: HourlyRows,
  rows: { get(hourMs: number): CandleRow | undefined } | undefined,
  now: number,
): Candle[] {
  return hourlySeries(prices, now).map(([hour, close]) => {
    const timestamp = new Date(hour).toISOString();
    const row = rows?.get(hour);
    if (!row) return { timestamp, open: close, high: close, low: close, close, twap: close, volumeUsd: 0 };
    return {
      timestamp,
      open: row.open,
      high: Math.max(row.high, close),
      low: Math.min(row.low, close),
      close,
      twap: twapOf(row, now),
      volumeUsd: row.volumeUsd,
    };
  });
}

const FIELDS = 8; // open, high, low, close, volumeUsd, area, coveredFromMs, lastAtMs

/**
 * One token's candle rows, hours ascending, their values in one flat array of doubles: V8 keeps such an
 * array unboxed (8 bytes a value), where an object per row boxes every double (about 200 bytes a row, which
 * for 10,000 tokens × 24 hours was most of the read model's heap).
 */
export class CandleTable {
  private readonly hours: number[] = [];
  private readonly values: number[] = [];

  get size(): number {
    return this.hours.length;
  }

  set(r: CandleRow): void {
    let i = this.hours.length;
    while (i > 0 && this.hours[i - 1]! > r.hourMs) i--;
    const row = [r.open, r.high, r.low, r.close, r.volumeUsd, r.area, r.coveredFromMs, r.lastAtMs];
    if (i > 0 && this.hours[i - 1] === r.hourMs) this.values.splice((i - 1) * FIELDS, FIELDS, ...row);
    else {
      this.hours.splice(i, 0, r.hourMs);
      this.values.splice(i * FIELDS, 0, ...row);
    }
  }

  get(hourMs: number): CandleRow | undefined {
    let lo = 0;
    let hi = this.hours.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.hours[mid]! < hourMs) lo = mid + 1;
      else hi = mid;
    }
    if (this.hours[lo] !== hourMs) return undefined;
    const v = this.values;
    const o = lo * FIELDS;
    return {
      token: '',
      hourMs,
      open: v[o]!,
      high: v[o + 1]!,
      low: v[o + 2]!,
      close: v[o + 3]!,
      volumeUsd: v[o + 4]!,
      area: v[o + 5]!,
      coveredFromMs: v[o + 6]!,
      lastAtMs: v[o + 7]!,
    };
  }

  /** Drops rows no window from `firstHour` on needs: all before it but the newest. */
  prune(firstHour: number): void {
    let before = 0;
    while (before < this.hours.length && this.hours[before]! < firstHour) before++;
    if (before > 1) {
      this.hours.splice(0, before - 1);
      this.values.splice(0, (before - 1) * FIELDS);
    }
  }
}
