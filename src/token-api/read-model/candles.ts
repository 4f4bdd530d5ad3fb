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

export interface Candle {
  timestamp: string;
  open: number;
  high: number;
  low: number;
  close: number;
  twap: number;
  volumeUsd: number;
}

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
export function candlesAt(prices: HourlyRows, rows: ReadonlyMap<number, CandleRow> | undefined, now: number): Candle[] {
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

/** Drops rows no window from `firstHour` on needs: all before it but the newest. */
export function pruneCandleRows(rows: Map<number, CandleRow>, firstHour: number): void {
  let newestBefore: number | undefined;
  for (const h of rows.keys()) if (h < firstHour && (newestBefore === undefined || h > newestBefore)) newestBefore = h;
  for (const h of [...rows.keys()]) if (h < firstHour && h !== newestBefore) rows.delete(h);
}
