import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IndexerStore } from '../../src/token-api/indexer/store.js';
import {
  hourlySeries,
  pruneBefore,
  upsertHour,
  windowHours,
  type HourlyRows,
} from '../../src/token-api/read-model/series.js';
import { addr, expectSpecResponse, seedPrices, seedTokens, startTestApi, type TestApi } from './helpers.js';

const HOUR = 3_600_000;
const NOW = Date.now();
const hourStart = (t: number) => Math.floor(t / HOUR) * HOUR;
/** An observation `h` hours before the current hour began, `m` minutes into its hour. */
const at = (h: number, m = 20) => new Date(hourStart(NOW) - h * HOUR + m * 60_000);

const D = addr(0xd1); // priced long before the window, then twice inside it
const E = addr(0xe1); // first priced three hours ago
const F = addr(0xf1); // never priced

let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
  await seedTokens(t, [{ address: D, currentPrice: 3 }, { address: E, currentPrice: 7 }, { address: F }]);
  await seedPrices(t, [
    { token: D, price: 1, at: at(40) },
    { token: D, price: 2, at: at(10) },
    { token: D, price: 3, at: at(2) },
    { token: E, price: 7, at: at(3, 50) },
  ]);
});
afterAll(() => t?.close());

const prices = async (address: string) =>
  (await expectSpecResponse('getTokenPrices', await fetch(`${t.url}/prices/${address}`))) as {
    price: number;
    timestamp: string;
  }[];

describe('hourly price series', () => {
  it('behavior: an hour with no swap still has its point, carrying the last price forward', async () => {
    const series = await prices(D);
    expect([24, 25]).toContain(series.length);
    const point = (h: number) => series.find((p) => p.timestamp === new Date(hourStart(NOW) - h * HOUR).toISOString());
    // carried from 40 h back
    expect(point(20)).toEqual({ price: 1, timestamp: new Date(hourStart(NOW) - 20 * HOUR).toISOString() });
    expect(point(5)?.price).toBe(2); // no swap since 10 h back
    expect(point(2)?.price).toBe(3);
    expect(point(0)?.price).toBe(3);
    for (const p of series) expect(Date.parse(p.timestamp) % HOUR).toBe(0);
  });

  it('behavior: a token first priced inside the window has points from that hour on', async () => {
    const series = await prices(E);
    expect(series[0]).toEqual({ price: 7, timestamp: new Date(hourStart(NOW) - 3 * HOUR).toISOString() });
    expect(series.map((p) => p.price)).toEqual(Array(series.length).fill(7));
    expect(series.length).toBeGreaterThanOrEqual(4);
    expect(await prices(F)).toEqual([]);
  });

  it('behavior: last24hVariation runs from the first to the last point of that same series', async () => {
    await t.db.client.query('test.series', (knex) => new IndexerStore(t.schema).refreshDerived(knex, new Date(), 1e12));
    await t.api.sync();
    for (const address of [D, E]) {
      const series = await prices(address);
      const token = (await (await fetch(`${t.url}/tokens/${address}`)).json()) as { last24hVariation: number | null };
      const [first, last] = [series[0]!.price, series.at(-1)!.price];
      expect(token.last24hVariation).toBeCloseTo(((last - first) / first) * 100, 9);
    }
    expect(
      ((await (await fetch(`${t.url}/tokens/${F}`)).json()) as { last24hVariation: unknown }).last24hVariation,
    ).toBeNull();
  });
});

describe('hourly series rule (units)', () => {
  /**
   * The documented rule, naively: each hour H of [now − 24 h, now] at or after the first row, the latest row at or
   * before H.
   */
  const naive = (rows: [number, number][], now: number) => {
    const out: [number, number][] = [];
    for (let h = Math.ceil((now - 24 * HOUR) / HOUR) * HOUR; h <= now; h += HOUR) {
      const upTo = rows.filter(([hour]) => hour <= h).sort((a, b) => a[0] - b[0]);
      if (upTo.length > 0) out.push([h, upTo.at(-1)![1]]);
    }
    return out;
  };

  it('behavior: matches the rule for any rows and clock, also after pruning, with 24 or 25 points once priced before the window', () => {
    const base = hourStart(NOW);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: -60, max: 2 }), fc.double({ min: 0, max: 1e6, noNaN: true })), {
          maxLength: 40,
        }),
        fc.integer({ min: 0, max: HOUR }),
        (raw, offset) => {
          const now = base + offset;
          const rows: HourlyRows = { hours: [], prices: [] };
          const latest = new Map<number, number>();
          for (const [h, price] of raw) {
            upsertHour(rows, base + h * HOUR, price);
            latest.set(base + h * HOUR, price);
          }
          const expected = naive([...latest], now);
          expect(hourlySeries(rows, now)).toEqual(expected);
          pruneBefore(rows, windowHours(now).first);
          expect(hourlySeries(rows, now)).toEqual(expected);
          if ([...latest.keys()].some((h) => h <= windowHours(now).first)) expect([24, 25]).toContain(expected.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('series JSON', () => {
  it('behavior: is exactly what JSON.stringify gives for the points', async () => {
    const { seriesJson } = await import('../../src/token-api/read-model/series.js');
    const rows: HourlyRows = { hours: [], prices: [] };
    const base = hourStart(NOW);
    for (const [h, p] of [
      [-30, 1.5],
      [-10, 1e-7],
      [-3, 123456789.123],
      [0, 0],
    ] as const)
      upsertHour(rows, base + h * HOUR, p);
    const now = base + 17 * 60_000;
    expect(seriesJson(rows, now)).toBe(
      JSON.stringify(hourlySeries(rows, now).map(([h, price]) => ({ price, timestamp: new Date(h).toISOString() }))),
    );
  });
});
