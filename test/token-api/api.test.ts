import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSpecResponse, seedPrices, seedTokens, startTestApi, type TestApi, type TokenSeed } from './helpers.js';

let t: TestApi;
const NOW = Date.now();
const hoursAgo = (h: number) => new Date(NOW - h * 3_600_000);

const A = '0x00000000000000000000000000000000000000aa';
const B = '0x00000000000000000000000000000000000000bb';
const C = '0x00000000000000000000000000000000000000cc';
const MIXED = '0xAbCdEf0000000000000000000000000000000001';
const UNKNOWN = '0x0000000000000000000000000000000000000001';

const seeds: TokenSeed[] = [
  {
    address: A,
    name: 'Alpha',
    symbol: 'ALP',
    currentPrice: 2,
    priceUpdatedAt: hoursAgo(1),
    last24hVariation: 5,
    fdv: 2000,
    totalSupply: '1000',
    swaps: 3,
    buys: 2,
    sells: 1,
    isSecure: true,
    listLogo: 'https://tokens.example.org/alp.png',
  },
  {
    address: B,
    name: 'Beta',
    symbol: 'BET',
    currentPrice: 1,
    priceUpdatedAt: hoursAgo(2),
    last24hVariation: -10,
    fdv: 5000,
    totalSupply: '5000.25',
    swaps: 9,
    buys: 4,
    sells: 5,
  },
  { address: C, name: 'Gamma', symbol: 'GAM', decimals: 6, totalSupply: '1000000000.5', isPossibleSpam: true },
  { address: MIXED, name: 'Mixed', symbol: 'MIX', isPossibleSpam: null },
];

beforeAll(async () => {
  t = await startTestApi();
  await seedTokens(t, seeds);
  await seedPrices(t, [...observedA.map((o) => ({ token: A, ...o })), { token: B, price: 1, at: hoursAgo(2) }]);
});
afterAll(() => t?.close());

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${t.url}${path}`, { headers });

describe('token API: tokens', () => {
  it('behavior: the default list is fdv desc with nulls last, ties by address, and complete meta', async () => {
    const { data, response } = await t.client.GET('/tokens');
    expect(response.status).toBe(200);
    expect(data!.data.map((x) => x.contractAddress)).toEqual([B, A, C, MIXED.toLowerCase()]);
    expect(data!.meta).toEqual({ page: 1, limit: 50, totalItemsCount: 4, pagesCount: 1 });
    await expectSpecResponse('listTokens', await get('/tokens'));
  });

  it('behavior: a token carries its figures, list logo or generated logo, and isPossibleSpam only when assessed', async () => {
    const { data } = await t.client.GET('/tokens', { params: { query: { order: 'name', sort: 'asc' } } });
    const [alpha, beta, gamma, mixed] = data!.data;
    expect(alpha).toEqual({
      name: 'Alpha',
      symbol: 'ALP',
      decimals: 18,
      logo: 'https://tokens.example.org/alp.png',
      contractAddress: A,
      currentPrice: 2,
      priceUpdatedAt: hoursAgo(1).toISOString(),
      last24hVariation: 5,
      isPossibleSpam: false,
      info: { sells: 1, buys: 2, swaps: 3, fdv: 2000, totalSupply: '1000' },
    });
    expect(beta!.info.totalSupply).toBe('5000.25');
    expect(gamma).toMatchObject({
      currentPrice: null,
      priceUpdatedAt: null,
      last24hVariation: null,
      isPossibleSpam: true,
      info: { fdv: null, totalSupply: '1000000000.5' },
    });
    expect(gamma!.logo).toBe(`${t.url}/logos/${C}.svg`);
    expect(mixed).not.toHaveProperty('isPossibleSpam');
    const logo = await get(new URL(gamma!.logo).pathname);
    expect(logo.status).toBe(200);
    expect(logo.headers.get('content-type')).toContain('image/svg+xml');
    expect(await logo.text()).toMatch(/^<svg /);
  });

  it('behavior: isSecure filters both ways', async () => {
    const secure = await t.client.GET('/tokens', { params: { query: { isSecure: true } } });
    expect(secure.data!.data.map((x) => x.contractAddress)).toEqual([A]);
    const notSecure = await t.client.GET('/tokens', { params: { query: { isSecure: false } } });
    expect(notSecure.data!.meta.totalItemsCount).toBe(3);
  });

  it('behavior: addresses filters in any case, duplicates count once', async () => {
    const { data } = await t.client.GET('/tokens', {
      params: { query: { addresses: `${A.toUpperCase().replace('0X', '0x')},${C},${C},${UNKNOWN}` } },
    });
    expect(data!.data.map((x) => x.contractAddress).sort()).toEqual([A, C]);
    expect(data!.meta.totalItemsCount).toBe(2);
  });

  it('behavior: a page past the end is empty with correct meta', async () => {
    const { data } = await t.client.GET('/tokens', { params: { query: { page: 3, limit: 2 } } });
    expect(data).toEqual({ data: [], meta: { page: 3, limit: 2, totalItemsCount: 4, pagesCount: 2 } });
  });

  it('error: page, limit, order, sort, isSecure out of range are 400 problems naming the parameter', async () => {
    for (const [query, name] of [
      ['page=0', 'page'],
      ['page=1001', 'page'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['order=price', 'order'],
      ['sort=up', 'sort'],
      ['isSecure=maybe', 'isSecure'],
      ['bogus=1', 'bogus'],
    ] as const) {
      const res = await get(`/tokens?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      const body = (await expectSpecResponse('listTokens', res)) as { detail: string };
      expect(body.detail, query).toContain(name);
    }
  });

  it('error: addresses with a bad item, an empty item or more than 100 items are 400 naming the problem', async () => {
    const bad = await get(`/tokens?addresses=${A},0x12345`);
    expect(bad.status).toBe(400);
    expect(((await expectSpecResponse('listTokens', bad)) as { detail: string }).detail).toContain("item 2 '0x12345'");
    const empty = await get(`/tokens?addresses=${A},`);
    expect(((await expectSpecResponse('listTokens', empty)) as { detail: string }).detail).toContain('item 2');
    const many = await get(`/tokens?addresses=${Array.from({ length: 101 }, () => A).join(',')}`);
    expect(many.status).toBe(400);
    expect(((await expectSpecResponse('listTokens', many)) as { detail: string }).detail).toContain('at most 100');
    const hundred = await get(`/tokens?addresses=${Array.from({ length: 100 }, () => A).join(',')}`);
    expect(hundred.status).toBe(200);
  });

  it('behavior: one token by address in any case, lower-case in the response', async () => {
    const res = await get(`/tokens/${MIXED}`);
    const body = (await expectSpecResponse('getToken', res)) as { contractAddress: string };
    expect(body.contractAddress).toBe(MIXED.toLowerCase());
  });

  it('error: a malformed address is 400 and an unknown one 404, both problems', async () => {
    const bad = await get('/tokens/0xabc');
    expect(bad.status).toBe(400);
    expect(((await expectSpecResponse('getToken', bad)) as { detail: string }).detail).toContain('contractAddress');
    const missing = await get(`/tokens/${UNKNOWN}`);
    expect(missing.status).toBe(404);
    expect(((await expectSpecResponse('getToken', missing)) as { detail: string }).detail).toContain(UNKNOWN);
  });
});

/**
 * The series getTokenPrices documents, written out naively: each hour of the window, the latest observation up to its
 * end.
 */
function expectedSeries(observations: { price: number; at: Date }[], now: number) {
  const HOUR = 3_600_000;
  const out: { price: number; timestamp: string }[] = [];
  for (let h = Math.ceil((now - 24 * HOUR) / HOUR) * HOUR; h <= now; h += HOUR) {
    const seen = observations.filter((o) => o.at.getTime() < h + HOUR).sort((a, b) => a.at.getTime() - b.at.getTime());
    if (seen.length > 0) out.push({ price: seen.at(-1)!.price, timestamp: new Date(h).toISOString() });
  }
  return out;
}

/** GETs `path` and the expected value at the request time, retrying once if an hour boundary fell in between. */
async function atRequestTime<T>(path: string, expected: (now: number) => T): Promise<{ body: unknown; expected: T }> {
  for (let attempt = 0; ; attempt++) {
    const before = Date.now();
    const body = await (await get(path)).json();
    const after = Date.now();
    if (Math.floor(before / 3_600_000) === Math.floor(after / 3_600_000) || attempt > 0)
      return { body, expected: expected(after) };
  }
}

const observedA = [
  { price: 1.9, at: hoursAgo(30) },
  { price: 1.5, at: hoursAgo(23.5) },
  { price: 1.8, at: hoursAgo(5) },
  { price: 2, at: hoursAgo(1) },
];

describe('token API: prices', () => {
  it('behavior: one point per hour of the last 24 h, oldest first, hours without a swap carrying the last price', async () => {
    const { body, expected } = await atRequestTime(`/prices/${A}`, (now) => expectedSeries(observedA, now));
    expect(body).toEqual(expected);
    expect((body as unknown[]).length).toBeGreaterThanOrEqual(24);
    expect((body as unknown[]).length).toBeLessThanOrEqual(25);
    // Three hours ago nothing traded: the point is there, with the price observed five hours ago.
    const threeHoursAgo = new Date(Math.floor(hoursAgo(3).getTime() / 3_600_000) * 3_600_000).toISOString();
    expect(body).toContainEqual({ price: 1.8, timestamp: threeHoursAgo });
    await expectSpecResponse('getTokenPrices', await get(`/prices/${A}`));
  });

  it('behavior: a known token without prices has an empty list; unknown is 404, malformed 400', async () => {
    expect(await (await get(`/prices/${C}`)).json()).toEqual([]);
    expect((await get(`/prices/${UNKNOWN}`)).status).toBe(404);
    await expectSpecResponse('getTokenPrices', await get(`/prices/${UNKNOWN}`));
    await expectSpecResponse('getTokenPrices', await get('/prices/0xnothex'));
  });

  it('behavior: /prices has one lower-case key per distinct address, unknown tokens map to []', async () => {
    const res = await get(`/prices?addresses=${A.toUpperCase().replace('0X', '0x')},${B},${B},${UNKNOWN}`);
    const body = (await expectSpecResponse('getPrices', res)) as Record<string, unknown[]>;
    expect(Object.keys(body)).toEqual([A, B, UNKNOWN]);
    expect(body[A]!.length).toBeGreaterThanOrEqual(24);
    // B was first priced two hours ago: points from that hour on only.
    expect(body[B]).toEqual(expectedSeries([{ price: 1, at: hoursAgo(2) }], Date.now()));
    expect(body[UNKNOWN]).toEqual([]);
  });

  it('error: /prices without addresses, with a bad item or with 101 items is 400', async () => {
    for (const q of [
      '',
      '?addresses=',
      `?addresses=${A},nope`,
      `?addresses=${Array.from({ length: 101 }, () => A).join(',')}`,
    ]) {
      const res = await get(`/prices${q}`);
      expect(res.status, q).toBe(400);
      await expectSpecResponse('getPrices', res);
    }
  });
});

describe('token API: caching headers', () => {
  it('behavior: every 200 has ETag and Cache-Control; a matching If-None-Match is a bodiless 304', async () => {
    for (const [op, path] of [
      ['listTokens', '/tokens?limit=2'],
      ['getToken', `/tokens/${A}`],
      ['getTokenPrices', `/prices/${A}`],
      ['getPrices', `/prices?addresses=${A}`],
    ] as const) {
      const first = await get(path);
      expect(first.status).toBe(200);
      const etag = first.headers.get('etag')!;
      expect(etag).toMatch(/^"[^"]+"$/);
      expect(first.headers.get('cache-control')).toBe('public, max-age=30');
      const again = await get(path, { 'if-none-match': `W/"other", ${etag}` });
      expect(again.status, path).toBe(304);
      await expectSpecResponse(op, again);
      expect(again.headers.get('etag')).toBe(etag);
      const stale = await get(path, { 'if-none-match': '"stale"' });
      expect(stale.status).toBe(200);
    }
  });

  it('behavior: the ETag changes when the data does', async () => {
    const before = (await get(`/tokens/${B}`)).headers.get('etag');
    await t.db.client.knex(`${t.schema}.tokens`).where('address', B).update({ swaps: 10 });
    await t.api.sync();
    const after = await get(`/tokens/${B}`, { 'if-none-match': before! });
    expect(after.status).toBe(200);
    expect(after.headers.get('etag')).not.toBe(before);
  });
});

describe('token API: spec, docs, health, metrics', () => {
  it('behavior: serves the spec as JSON and YAML with this server first in servers', async () => {
    const json = (await (await get('/openapi.json')).json()) as {
      openapi: string;
      servers: { url: string }[];
      paths: object;
    };
    expect(json.openapi).toBe('3.0.3');
    expect(json.servers[0]!.url).toBe(t.url);
    expect(Object.keys(json.paths)).toHaveLength(8);
    const yaml = await get('/openapi.yaml');
    expect(yaml.headers.get('content-type')).toContain('yaml');
    expect(await yaml.text()).toContain('operationId: listTokens');
  });

  it('behavior: /docs is an HTML page whose assets are served locally', async () => {
    const page = await get('/docs');
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3)/);
    for (const src of html.match(/(?:src|href)="(\/docs\/[^"]+)"/g)!.map((m) => m.split('"')[1]!)) {
      expect((await get(src)).status, src).toBe(200);
    }
  });

  it('behavior: health and metrics', async () => {
    expect(await (await get('/health/live')).json()).toEqual({ status: 'ok' });
    expect(await (await get('/health/ready')).json()).toMatchObject({
      status: 'ok',
      checks: expect.arrayContaining([{ name: 'database', ok: true }]),
    });
    const metrics = await (await get('/metrics')).text();
    expect(metrics).toContain('l2stack_token_api_requests_total{route="/tokens",status="200"}');
  });

  it('error: an unknown route is a 404 problem', async () => {
    const res = await get('/nope');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });
});

describe('token API: a production replica (fast path)', () => {
  it('behavior: serves each committed write once loaded, with a new ETag, and 304 for the current one', async () => {
    // A second server on the same tables, as a production instance runs (no response validation: the fast path on).
    const replica = await startTestApi({}, t.db, { validateResponses: false, schema: t.schema });
    try {
      const url = `${replica.url}/tokens/${A}`;
      const first = await fetch(url);
      expect(((await first.json()) as { info: { swaps: number } }).info.swaps).toBe(3);
      await t.db.client.knex(`${t.schema}.tokens`).where('address', A).update({ swaps: 77 });
      await replica.api.sync();
      const second = await fetch(url, { headers: { 'if-none-match': first.headers.get('etag')! } });
      expect(second.status).toBe(200);
      expect(((await second.json()) as { info: { swaps: number } }).info.swaps).toBe(77);
      expect((await fetch(url, { headers: { 'if-none-match': second.headers.get('etag')! } })).status).toBe(304);
      expect((await fetch(`${replica.url}/tokens?limit=1&page=2`)).status).toBe(200);
      const metrics = await (await fetch(`${replica.url}/metrics`)).text();
      expect(metrics).toContain('l2stack_token_api_requests_total{route="/tokens/:contractAddress",status="304"} 1');
    } finally {
      await replica.close();
    }
  });
});

describe('token API: failures', () => {
  it('behavior: when the database fails, the replica keeps serving its last version and readiness names the failure', async () => {
    // Its last version holds every committed write: the test before wrote token A through another replica, and on
    // PostgreSQL the notification reaches this one asynchronously (a load in flight would change A after `before`).
    await t.api.sync();
    const before = await (await get(`/tokens/${A}`)).json();
    await t.db.client.knex.raw('alter table ??.tokens rename to tokens_gone', [t.schema]);
    try {
      await expect(t.api.sync()).rejects.toThrow();
      const res = await get(`/tokens/${A}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(before);
      await new Promise((r) => setTimeout(r, 1_100)); // readiness answers are shared for a second
      const ready = await get('/health/ready');
      expect(ready.status).toBe(503);
      const report = (await ready.json()) as { checks: { name: string; ok: boolean; detail?: string }[] };
      const readModel = report.checks.find((c) => c.name === 'readModel');
      expect(readModel?.ok).toBe(false);
      expect(readModel?.detail).toMatch(/^last load failed/);
      expect(readModel?.detail).not.toMatch(/ at /);
    } finally {
      await t.db.client.knex.raw('alter table ??.tokens_gone rename to tokens', [t.schema]);
    }
    await t.api.sync();
    // Ready again once a fresh readiness answer is computed (they are shared for a second). On a loaded machine a
    // probe can still be slow, so poll for up to 20 s and, if it never recovers, fail showing the last report.
    let last = { status: 0, body: '' };
    for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 1_100));
      const res = await get('/health/ready');
      last = { status: res.status, body: await res.text() };
      if (last.status === 200) break;
    }
    expect(last).toMatchObject({ status: 200 });
  });
});
