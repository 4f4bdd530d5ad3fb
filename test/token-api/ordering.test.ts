import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OrderColumn } from '../../src/token-api/repository.js';
import { addr, ORDER_COLUMNS, seedTokens, startTestApi, type TestApi, type TokenSeed } from './helpers.js';

/**
 * Ordering by every `order` column in both directions, walked page by page: the concatenated pages must
 * equal the reference order (nulls last either way, ties by address ascending), with no token repeated
 * or skipped. The data is built to have ties and nulls in every column that can have them.
 */
let t: TestApi;
const N = 41;
const base = Date.parse('2025-03-01T00:00:00Z');
const seeds: (TokenSeed & { address: string })[] = Array.from({ length: N }, (_, i) => {
  const priced = i % 5 !== 0;
  const price = priced ? [0.5, 1, 2, 2, 3.25][i % 5]! * (1 + (i % 3)) : null;
  const variation = priced && i % 7 !== 0 ? [-12.5, 4, 12.5, -4, 0][i % 5]! : null;
  return {
    // Addresses deliberately not in insertion order.
    address: addr(((i * 7919) % 1000) + 1),
    name: ['alpha', 'Beta', 'beta', 'Gamma', 'delta', 'Ω mega'][i % 6]!,
    symbol: ['AAA', 'BBB', 'aaa', 'CCC'][i % 4]!,
    decimals: [18, 6, 8, 18, 0][i % 5]!,
    totalSupply: ['1000', '1000.5', '999.999999999999999999', '1000000000000000000000000.1', '0'][i % 5]!,
    currentPrice: price,
    priceUpdatedAt: priced ? new Date(base + (i % 4) * 3_600_000) : null,
    last24hVariation: variation,
    fdv: price === null ? null : price * (1 + (i % 4)),
    buys: i % 6,
    sells: (i * 3) % 5,
    swaps: (i % 6) + ((i * 3) % 5),
    isPossibleSpam: i % 9 === 0 ? null : i % 2 === 0,
    isSecure: i % 3 === 0,
    createdAt: new Date(base + (i % 8) * 60_000),
    updatedAt: new Date(base + (i % 3) * 1_000),
  };
});

type Value = number | string | boolean | bigint | null;
const scaled = (s: string) => {
  const [w, f = ''] = s.split('.');
  return BigInt(w!) * 10n ** 30n + BigInt(f.padEnd(30, '0'));
};
const value = (s: (typeof seeds)[number], c: OrderColumn): Value => {
  switch (c) {
    case 'name':
      return s.name!;
    case 'symbol':
      return s.symbol!;
    case 'decimals':
      return s.decimals!;
    case 'contractAddress':
      return s.address;
    case 'currentPrice':
      return s.currentPrice ?? null;
    case 'priceUpdatedAt':
      return s.priceUpdatedAt?.getTime() ?? null;
    case 'createdAt':
      return s.createdAt!.getTime();
    case 'updatedAt':
      return s.updatedAt!.getTime();
    case 'last24hVariation':
      return s.last24hVariation ?? null;
    case 'last24hVariationAbsolute':
      return s.last24hVariation == null ? null : Math.abs(s.last24hVariation);
    case 'sells':
      return s.sells!;
    case 'buys':
      return s.buys!;
    case 'swaps':
      return s.swaps!;
    case 'isPossibleSpam':
      return s.isPossibleSpam ?? null;
    case 'totalSupply':
      return scaled(s.totalSupply!);
    case 'fdv':
      return s.fdv ?? null;
  }
};
// Byte order for strings (the API orders names and symbols with the "C" collation).
const cmp = (a: Exclude<Value, null>, b: Exclude<Value, null>) =>
  typeof a === 'string' ? Buffer.compare(Buffer.from(a), Buffer.from(b as string)) : a < b ? -1 : a > b ? 1 : 0;

function reference(
  c: OrderColumn,
  sort: 'asc' | 'desc',
  filter: (s: (typeof seeds)[number]) => boolean = () => true,
): string[] {
  return seeds
    .filter(filter)
    .sort((x, y) => {
      const a = value(x, c);
      const b = value(y, c);
      if (a === null || b === null) {
        if (a !== b) return a === null ? 1 : -1;
      } else {
        const d = cmp(a, b);
        if (d !== 0) return sort === 'asc' ? d : -d;
      }
      return x.address < y.address ? -1 : 1;
    })
    .map((s) => s.address);
}

beforeAll(async () => {
  t = await startTestApi();
  await seedTokens(t, seeds);
});
afterAll(() => t?.close());

async function walk(query: Record<string, string | number | boolean>, limit: number): Promise<string[]> {
  const out: string[] = [];
  for (let page = 1; ; page++) {
    const { data, response } = await t.client.GET('/tokens', { params: { query: { ...query, page, limit } } });
    expect(response.status).toBe(200);
    expect(data!.meta.pagesCount).toBe(Math.ceil(data!.meta.totalItemsCount / limit));
    out.push(...data!.data.map((x) => x.contractAddress));
    if (data!.data.length < limit) {
      expect(out).toHaveLength(data!.meta.totalItemsCount);
      return out;
    }
  }
}

describe('token API: ordering', () => {
  it('args: all 16 order columns are accepted', () => {
    expect(ORDER_COLUMNS).toHaveLength(16);
  });

  for (const column of ORDER_COLUMNS) {
    it(`behavior: order=${column} in both directions pages through every token once, in order`, async () => {
      for (const sort of ['asc', 'desc'] as const) {
        const pages = await walk({ order: column, sort }, 7);
        expect(pages, `${column} ${sort}`).toEqual(reference(column, sort));
        expect(new Set(pages).size).toBe(N);
      }
    });
  }

  it('behavior: ordering combines with the isSecure filter', async () => {
    expect(await walk({ order: 'swaps', sort: 'desc', isSecure: true }, 4)).toEqual(
      reference('swaps', 'desc', (s) => s.isSecure === true),
    );
  });

  it('behavior: without order and sort the list is fdv desc', async () => {
    expect(await walk({}, 10)).toEqual(reference('fdv', 'desc'));
  });
});
