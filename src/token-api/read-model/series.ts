/**
 * The hourly price series of one token, as getTokenPrices documents it: one point per UTC hour H with now − 24 h ≤ H ≤
 * now (24 points, 25 when now is exactly on the hour), for every such hour at or after the token's first known price. A
 * point's price is the last observation at or before the end of its hour (the hour's own last observation, or the price
 * carried forward from an earlier hour); its timestamp is the hour.
 */

export const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The UTC hour (epoch ms) that `ms` falls in. */
export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** First and last hour of the window at `now` (epoch ms). */
export function windowHours(now: number): { first: number; last: number } {
  return { first: Math.ceil((now - DAY_MS) / HOUR_MS) * HOUR_MS, last: hourOf(now) };
}

/** A token's hourly rows, oldest first, in two parallel arrays (compact: 24–25 rows per token). */
export interface HourlyRows {
  hours: number[];
  prices: number[];
}

/** Inserts or replaces the row of `hourMs`, keeping the rows sorted. */
export function upsertHour(rows: HourlyRows, hourMs: number, price: number): void {
  let i = rows.hours.length;
  while (i > 0 && rows.hours[i - 1]! > hourMs) i--;
  if (i > 0 && rows.hours[i - 1] === hourMs) rows.prices[i - 1] = price;
  else {
    rows.hours.splice(i, 0, hourMs);
    rows.prices.splice(i, 0, price);
  }
}

/** Drops rows no window from `firstHour` on needs: all before it but the newest (the carried price). */
export function pruneBefore(rows: HourlyRows, firstHour: number): void {
  let before = 0;
  while (before < rows.hours.length && rows.hours[before]! < firstHour) before++;
  if (before > 1) {
    rows.hours.splice(0, before - 1);
    rows.prices.splice(0, before - 1);
  }
}

/** The series at `now` as [hour, price] pairs (see the module comment). */
export function hourlySeries(rows: HourlyRows, now: number): [number, number][] {
  const { first, last } = windowHours(now);
  const out: [number, number][] = [];
  if (rows.hours.length === 0) return out;
  let i = 0;
  let carried: number | undefined;
  for (let hour = Math.max(first, rows.hours[0]!); hour <= last; hour += HOUR_MS) {
    while (i < rows.hours.length && rows.hours[i]! <= hour) carried = rows.prices[i++];
    if (carried !== undefined) out.push([hour, carried]);
  }
  return out;
}

// ISO texts of recent hours: a series is 25 of them, and every token's series shares the same hours.
const hourTexts = new Map<number, string>();
function hourText(hour: number): string {
  let text = hourTexts.get(hour);
  if (text === undefined) {
    if (hourTexts.size > 200) hourTexts.clear();
    hourTexts.set(hour, (text = new Date(hour).toISOString()));
  }
  return text;
}

/** The series as the API's JSON array of Price (the text JSON.stringify gives, built without the objects). */
export function seriesJson(rows: HourlyRows, now: number): string {
  let out = '';
  for (const [hour, price] of hourlySeries(rows, now)) {
    out += `${out === '' ? '' : ','}{"price":${JSON.stringify(price)},"timestamp":"${hourText(hour)}"}`;
  }
  return `[${out}]`;
}
