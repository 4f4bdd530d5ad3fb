import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addr, seedPrices, seedTokens, startTestApi, type TestApi } from './helpers.js';

/**
 * The fast path answers well-formed requests before routing and the spec validator. Here a production
 * server (fast path on) and a validating server (fast path off, every response checked against the spec)
 * share one schema, and every URL must get the same status, headers that matter and body from both.
 */
let validated: TestApi;
let production: TestApi;
const A = addr(0xa1);
const B = addr(0xb2);
const NATIVE = addr(0xeeee);

beforeAll(async () => {
  // One public URL for both, so generated logo links are the same.
  const config = { nativeToken: NATIVE, publicUrl: 'http://api.example.org' };
  validated = await startTestApi(config);
  production = await startTestApi(config, validated.db, { validateResponses: false, schema: validated.schema });
  await seedTokens(validated, [
    { address: A, currentPrice: 2, fdv: 20, isSecure: true, swaps: 4 },
    { address: B, currentPrice: 1, fdv: 50, swaps: 9 },
    ...Array.from({ length: 30 }, (_, i) => ({
      address: addr(0x100 + i),
      swaps: i,
      fdv: i % 4 ? i : null,
      isSecure: i % 3 === 0,
    })),
  ]);
  await seedPrices(validated, [{ token: A, price: 2, at: new Date(Date.now() - 5 * 3_600_000) }]);
  await production.api.sync();
});
afterAll(async () => {
  await production?.close();
  await validated?.close();
});

const urls = [
  '/tokens',
  '/tokens?page=2&limit=5',
  '/tokens?order=swaps&sort=asc&isSecure=true',
  '/tokens?isSecure=false&limit=100',
  `/tokens?addresses=${A},${B.toUpperCase().replace('0X', '0x')}&order=name`,
  '/tokens?page=1000&limit=100',
  '/tokens?order=totalSupply',
  `/tokens/${A}`,
  `/tokens/${A.toUpperCase().replace('0X', '0x')}`,
  `/prices/${A}`,
  `/prices/${B}`,
  `/prices?addresses=${A},${B},${A},${addr(7)}`,
  `/tokens/${NATIVE}/supply/total`,
  `/tokens/${NATIVE}/supply/circulating?format=json`,
  `/tokens/${A}/price-sources`,
  `/tokens/${B}/price-sources`,
  `/prices/${A}/candles`,
  `/prices/${B}/candles`,
  `/tokens/${addr(9)}/price-sources`,
  `/prices/${addr(9)}/candles`,
  '/tokens/0x123/price-sources',
  `/prices/${A}/candles?x=1`,
  `/prices/${A}/candles/`,
  // Everything below must fall through to the validated route and get its answer.
  '/tokens?page=0',
  '/tokens?page=1001',
  '/tokens?page=01',
  '/tokens?page=1e2',
  '/tokens?limit=101',
  '/tokens?order=nope',
  '/tokens?sort=up',
  '/tokens?isSecure=yes',
  '/tokens?isSecure=TRUE',
  '/tokens?page=1&page=2',
  '/tokens?unknown=1',
  '/tokens?addresses=',
  '/tokens?addresses=0x12',
  `/tokens?addresses=${A},`,
  '/tokens?page=',
  '/tokens?page=%31',
  '/tokens?order=swaps+',
  `/tokens/${addr(9)}`,
  '/tokens/0x123',
  `/tokens/${A}?x=1`,
  `/tokens/${A}/`,
  `/prices/${addr(9)}`,
  `/prices/${A}?page=1`,
  '/prices',
  '/prices?addresses=',
  `/prices?addresses=${A}&x=1`,
  `/tokens/${A}/supply/total`,
  `/tokens/${NATIVE}/supply/total?format=xml`,
  `/tokens/${NATIVE}/supply/total?format=`,
  '/TOKENS',
  '/tokens/',
];

async function answer(base: string, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, { headers });
  const text = await res.text();
  const type = res.headers.get('content-type');
  return {
    status: res.status,
    type,
    etag: res.headers.get('etag'),
    cacheControl: res.headers.get('cache-control'),
    retryAfter: res.headers.get('retry-after'),
    body: type?.includes('json') ? JSON.parse(text) : text,
  };
}

describe('fast path', () => {
  it('behavior: every URL gets the same answer with and without the fast path', async () => {
    for (const path of urls) {
      expect(await answer(production.url, path), path).toEqual(await answer(validated.url, path));
    }
  });

  it('behavior: If-None-Match gives the same 304 on both paths', async () => {
    for (const path of ['/tokens?limit=3', `/tokens/${A}`, `/prices?addresses=${A}`]) {
      const { etag } = await answer(validated.url, path);
      const a = await answer(production.url, path, { 'if-none-match': etag! });
      expect(a, path).toEqual(await answer(validated.url, path, { 'if-none-match': etag! }));
      expect(a.status).toBe(304);
    }
  });

  it('behavior: fast-path answers are counted in metrics under their route', async () => {
    await fetch(`${production.url}/tokens/${B}`);
    const metrics = await (await fetch(`${production.url}/metrics`)).text();
    expect(metrics).toMatch(/l2stack_token_api_requests_total\{route="\/tokens\/:contractAddress",status="200"\} \d+/);
  });
});
