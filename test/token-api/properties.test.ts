import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addr,
  expectSpecResponse,
  ORDER_COLUMNS,
  seedPrices,
  seedTokens,
  startTestApi,
  type TestApi,
} from './helpers.js';

/**
 * Property-based tests over every query and path parameter, sent raw over HTTP: whatever the input, the
 * API never answers 5xx, every rejection is a documented problem+json 4xx, every success matches the spec,
 * and SQL-looking input changes nothing in the database.
 */
let t: TestApi;
const TOKENS = 12;

beforeAll(async () => {
  t = await startTestApi({ nativeToken: addr(1) });
  await seedTokens(
    t,
    Array.from({ length: TOKENS }, (_, i) => ({
      address: addr(i + 1),
      currentPrice: i % 3 ? i : null,
      fdv: i % 3 ? i * 10 : null,
      swaps: i,
    })),
  );
  await seedPrices(t, [{ token: addr(2), price: 2, at: new Date(Date.now() - 3_600_000) }]);
});
afterAll(() => t?.close());

const SQLISH = [
  "' OR '1'='1",
  '1; DROP TABLE tokens;--',
  'fdv desc; delete from tokens',
  'name) union select * from pg_user--',
  "0x0000000000000000000000000000000000000001' --",
  '%27%20OR%201%3D1',
  '"; select pg_sleep(10);--',
  '\\x00',
  '${7*7}',
  '<script>',
];
const validAddress = fc.stringMatching(/^0x[0-9a-fA-F]{40}$/);
const nastyText = fc.oneof(
  fc.constantFrom(...SQLISH),
  fc.string({ maxLength: 60 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
);
const numberish = fc.oneof(
  fc.integer({ min: -5, max: 1100 }).map(String),
  fc.constantFrom('', '1.5', '1e2', '0x10', 'NaN', '-0', '99999999999999999999', ' 1'),
  nastyText,
);
const addressList = fc.oneof(
  fc.array(validAddress, { minLength: 1, maxLength: 5 }).map((a) => a.join(',')),
  fc.array(fc.oneof(validAddress, nastyText), { minLength: 1, maxLength: 4 }).map((a) => a.join(',')),
  fc.integer({ min: 99, max: 102 }).map((n) => Array.from({ length: n }, (_, i) => addr(i + 1)).join(',')),
  nastyText,
);
const orderValue = fc.oneof(fc.constantFrom(...ORDER_COLUMNS), nastyText);
const listQuery = fc.record(
  {
    page: numberish,
    limit: numberish,
    isSecure: fc.oneof(fc.constantFrom('true', 'false', 'TRUE', '1', '0', 'yes', ''), nastyText),
    addresses: addressList,
    order: orderValue,
    sort: fc.oneof(fc.constantFrom('asc', 'desc', 'ASC', 'DESC', ''), nastyText),
    [' extra']: nastyText,
  },
  { requiredKeys: [] },
);

/** A path segment WHATWG URL parsing treats as "." or "..", whatever the case of an encoded dot. */
const DOT_SEGMENT = /^(\.|%2e){1,2}$/i;
const qs = (q: Record<string, string>) => new URLSearchParams(q).toString();
const rows = async () =>
  Number((await t.db.client.knex(`${t.schema}.tokens`).count<{ c: string }[]>({ c: '*' }))[0]!.c);

async function check(operationId: string, path: string, res: Response) {
  // The only documented 5xx a request can cause: supply before the first computation (this API has no supply job).
  if (!(operationId.endsWith('Supply') && res.status === 503)) expect(res.status, path).toBeLessThan(500);
  if (res.status >= 400) expect(res.headers.get('content-type'), path).toContain('application/problem+json');
  await expectSpecResponse(operationId, res);
}

describe('token API: properties', () => {
  it('behavior: GET /tokens with any query never fails server-side and always answers per the spec', async () => {
    await fc.assert(
      fc.asyncProperty(listQuery, async (q) => {
        const path = `/tokens?${qs(q as Record<string, string>)}`;
        await check('listTokens', path, await fetch(`${t.url}${path}`));
      }),
      { numRuns: 150 },
    );
    expect(await rows()).toBe(TOKENS);
  });

  it('behavior: valid list queries always succeed with a consistent page', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            page: fc.integer({ min: 1, max: 1000 }),
            limit: fc.integer({ min: 1, max: 100 }),
            sort: fc.constantFrom('asc', 'desc'),
            isSecure: fc.boolean(),
          },
          { requiredKeys: ['page', 'limit'] },
        ),
        async (q) => {
          const res = await fetch(
            `${t.url}/tokens?${qs(Object.fromEntries(Object.entries(q).map(([k, v]) => [k, String(v)])))}`,
          );
          expect(res.status).toBe(200);
          const body = (await expectSpecResponse('listTokens', res)) as {
            data: unknown[];
            meta: { totalItemsCount: number; pagesCount: number };
          };
          expect(body.meta.pagesCount).toBe(Math.ceil(body.meta.totalItemsCount / q.limit));
          expect(body.data.length).toBe(
            Math.max(0, Math.min(q.limit, body.meta.totalItemsCount - (q.page - 1) * q.limit)),
          );
        },
      ),
      { numRuns: 100 },
    );
  });

  it('behavior: GET /prices with any addresses never fails server-side', async () => {
    await fc.assert(
      fc.asyncProperty(fc.option(addressList, { nil: undefined }), nastyText, async (addresses, junk) => {
        const q: Record<string, string> = addresses === undefined ? {} : { addresses };
        if (junk.length % 3 === 0) q.other = junk;
        const path = `/prices?${qs(q)}`;
        await check('getPrices', path, await fetch(`${t.url}${path}`));
      }),
      { numRuns: 120 },
    );
    expect(await rows()).toBe(TOKENS);
  });

  it('behavior: any path segment as contractAddress gives 200, 400 or 404 per the spec on every path operation', async () => {
    const segment = fc.oneof(
      validAddress,
      nastyText.filter((s) => s.length > 0),
      fc.constant(addr(2)),
      fc.constant(addr(1).toUpperCase().replace('0X', '0x')),
    );
    await fc.assert(
      fc.asyncProperty(segment, fc.constantFrom('raw', 'json', 'xml', ''), async (raw, format) => {
        const seg = encodeURIComponent(raw);
        for (const [op, path] of [
          ['getToken', `/tokens/${seg}`],
          ['getTokenPrices', `/prices/${seg}`],
          ['getTotalSupply', `/tokens/${seg}/supply/total?format=${format}`],
          ['getCirculatingSupply', `/tokens/${seg}/supply/circulating?format=${format}`],
        ] as const) {
          const res = await fetch(`${t.url}${path}`);
          if (DOT_SEGMENT.test(seg)) {
            // URL parsing removes "." and ".." segments (also as %2E), so the request reaches another route or
            // none: whatever answers must still be a documented, non-5xx answer.
            expect(res.status, path).toBeLessThan(500);
            if (res.status >= 400) expect(res.headers.get('content-type'), path).toContain('application/problem+json');
            continue;
          }
          if (
            res.status === 404 &&
            res.headers.get('content-type')?.includes('problem') &&
            !/^0x[0-9a-fA-F]{40}$/.test(raw)
          ) {
            // A segment with "/" or ".." can leave the route entirely: still a problem+json 404, just not of this
            // operation.
            expect(res.status).toBeLessThan(500);
            continue;
          }
          await check(op, path, res);
        }
      }),
      { numRuns: 80 },
    );
    expect(await rows()).toBe(TOKENS);
  });
});
