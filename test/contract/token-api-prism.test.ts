import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addr, seedPrices, seedTokens, startTestApi, type TestApi } from '../token-api/helpers.js';

/**
 * Prism (Stoplight's OpenAPI proxy, `prism proxy --errors`) between a client and a running token API, as
 * an integrator's contract check would put it: every request and every answer of the token operations is
 * validated against specs/token-api.openapi.yaml by a validator that is not ours, and a violation turns
 * into an error response and an `sl-violations` header. The server runs as in production (fast path on,
 * no self-validation), so the answers checked are the ones integrators get.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const HOUR = 3_600_000;
const NOW = Date.now();
const hourStart = Math.floor(NOW / HOUR) * HOUR;
const A = addr(0xa1); // priced from pools, with candles and sources
const B = addr(0xb1); // the quote of A's pools, pegged
const C = addr(0xc1); // never priced
const NATIVE = addr(0xeeee);

let t: TestApi;
let prism: ChildProcess;
let base = '';

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

beforeAll(async () => {
  t = await startTestApi({ nativeToken: NATIVE }, undefined, { validateResponses: false });
  await seedTokens(t, [
    { address: A, currentPrice: 2.1, priceUpdatedAt: new Date(hourStart - HOUR + 600_000), fdv: 21, swaps: 3 },
    { address: B, currentPrice: 1, priceUpdatedAt: new Date(hourStart - 5 * HOUR) },
    { address: C },
  ]);
  await seedPrices(t, [
    { token: A, price: 2, at: new Date(hourStart - 5 * HOUR + 60_000) },
    { token: A, price: 2.1, at: new Date(hourStart - HOUR + 600_000) },
    { token: B, price: 1, at: new Date(hourStart - 5 * HOUR) },
  ]);
  const knex = t.db.client.knex;
  const candle = (h: number, open: number, close: number, coveredFrom: number, lastAt: number) => ({
    token: A,
    hour: new Date(hourStart - h * HOUR),
    open,
    high: Math.max(open, close, 3),
    low: Math.min(open, close),
    close,
    volume_usd: 1234.5,
    area: open * (lastAt - coveredFrom),
    covered_from: new Date(coveredFrom),
    last_at: new Date(lastAt),
  });
  await knex(`${t.schema}.candles`).insert([
    candle(5, 2, 2, hourStart - 5 * HOUR + 60_000, hourStart - 5 * HOUR + 60_000),
    candle(1, 2, 2.1, hourStart - HOUR, hourStart - HOUR + 600_000),
  ]);
  const params = {
    minLiquidityUsd: 1_000,
    outlierShare: 0.2,
    staleAfterSeconds: 604_800,
    referenceLiquidityUsd: 100_000,
  };
  const pool = (n: number, extra: object) => ({
    pool: addr(0xd0 + n),
    kind: n % 2 ? 'v3' : 'v2',
    quote: B,
    route: [B],
    quotePriceUsd: 1,
    block: 100 + n,
    timeMs: hourStart - HOUR + 600_000,
    ...extra,
  });
  await knex(`${t.schema}.price_sources`).insert([
    {
      token: A,
      observed_at: new Date(hourStart - HOUR + 600_000),
      block_number: 101,
      detail: JSON.stringify({
        price: 2.1,
        basis: 'pools',
        params,
        used: [
          pool(0, { liquidityUsd: 80_000, spotPrice: 2.1, weight: 0.8 }),
          pool(1, { liquidityUsd: 20_000, spotPrice: 2.1, weight: 0.2 }),
        ],
        excluded: [
          pool(2, { liquidityUsd: 30_000, spotPrice: 9, weight: 0, reason: 'outlier', medianOfOthers: 2.1 }),
          pool(3, {
            liquidityUsd: 10,
            spotPrice: 1,
            weight: 0,
            reason: 'belowMinLiquidity',
            block: undefined,
            timeMs: undefined,
          }),
        ],
      }),
    },
    {
      token: B,
      observed_at: new Date(hourStart - 5 * HOUR),
      block_number: 90,
      detail: JSON.stringify({ price: 1, basis: 'peg', params, used: [], excluded: [] }),
    },
  ]);
  await t.api.sync();

  const port = await freePort();
  prism = spawn(
    `${root}node_modules/.bin/prism`,
    [
      'proxy',
      `${root}specs/token-api.openapi.yaml`,
      t.url,
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--errors',
      '-v',
      'warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  prism.stdout!.on('data', (d) => (log += String(d)));
  prism.stderr!.on('data', (d) => (log += String(d)));
  base = `http://127.0.0.1:${port}`;
  // Bounded wait for the proxy to answer (it loads and dereferences the spec first).
  for (let i = 0; ; i++) {
    const up = await fetch(`${base}/tokens/${A}`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (up) break;
    if (i >= 600 || prism.exitCode !== null) throw new Error(`prism did not start within 60 s: ${log.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}, 120_000);
afterAll(async () => {
  if (prism && prism.exitCode === null) {
    const exited = new Promise((r) => prism.once('exit', r));
    prism.kill('SIGTERM');
    await exited;
  }
  await t?.close();
});

/** One request through Prism: the status, and no violation of the spec in either direction. */
async function viaPrism(path: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}${path}`);
  const text = await res.text();
  expect(res.headers.get('sl-violations'), `${path}: ${res.headers.get('sl-violations')}`).toBeNull();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

describe('token API through Prism (prism proxy --errors)', () => {
  it('behavior: getTokenPriceSources answers conform: pools, peg, no price, unknown token', async () => {
    const a = await viaPrism(`/tokens/${A}/price-sources`);
    expect(a).toMatchObject({ status: 200, body: { basis: 'pools', price: 2.1, liquidityUsd: 100_000 } });
    expect((a.body as { excluded: { reason: string }[] }).excluded.map((x) => x.reason)).toEqual([
      'outlier',
      'belowMinLiquidity',
    ]);
    expect(await viaPrism(`/tokens/${B}/price-sources`)).toMatchObject({
      status: 200,
      body: { basis: 'peg', confidence: 1 },
    });
    expect(await viaPrism(`/tokens/${C}/price-sources`)).toMatchObject({
      status: 200,
      body: { basis: 'none', confidence: null },
    });
    expect(await viaPrism(`/tokens/${addr(9)}/price-sources`)).toMatchObject({ status: 404, body: { status: 404 } });
  });

  it('behavior: getTokenCandles answers conform: candles beside the /prices points, none, unknown token', async () => {
    const candles = await viaPrism(`/prices/${A}/candles`);
    const points = await viaPrism(`/prices/${A}`);
    expect(candles.status).toBe(200);
    expect((candles.body as { close: number }[]).map((c) => c.close)).toEqual(
      (points.body as { price: number }[]).map((p) => p.price),
    );
    expect(await viaPrism(`/prices/${C}/candles`)).toEqual({ status: 200, body: [] });
    expect(await viaPrism(`/prices/${addr(9)}/candles`)).toMatchObject({ status: 404, body: { status: 404 } });
  });

  it('behavior: the seed operations still conform beside them', async () => {
    for (const path of ['/tokens', `/tokens/${A}`, `/prices/${A}`, `/prices?addresses=${A},${C}`])
      expect((await viaPrism(path)).status, path).toBe(200);
  });

  it('error: Prism refuses a malformed address before it reaches the server, as the spec says', async () => {
    for (const path of ['/tokens/0x12/price-sources', '/prices/0x12/candles']) {
      const res = await fetch(`${base}${path}`);
      await res.text();
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expect(res.status, path).toBeLessThan(500);
    }
  });
});
