import type { OrderColumn } from '../repository.js';
import type { TokenRecord } from './record.js';

/**
 * Orderings of the token list, in memory, exactly as PostgreSQL ordered them when the list was a query
 * (`<column> <dir> nulls last, address asc`): `collate "C"` text compares UTF-8 bytes, which is code-point
 * order; numeric supply compares as exact decimals; float NaN sorts above every number; timestamps compare
 * in microseconds (a JS Date would tie rows PostgreSQL tells apart).
 */

type Value = number | string | boolean | null;
type Kind = 'number' | 'text' | 'decimal' | 'boolean';

const COLUMNS: Record<OrderColumn, { kind: Kind; value: (r: TokenRecord) => Value }> = {
  name: { kind: 'text', value: (r) => r.name },
  symbol: { kind: 'text', value: (r) => r.symbol },
  decimals: { kind: 'number', value: (r) => r.decimals },
  contractAddress: { kind: 'text', value: (r) => r.address },
  currentPrice: { kind: 'number', value: (r) => r.currentPrice },
  priceUpdatedAt: { kind: 'number', value: (r) => r.priceUpdatedAtUs },
  createdAt: { kind: 'number', value: (r) => r.createdAtUs },
  updatedAt: { kind: 'number', value: (r) => r.updatedAtUs },
  last24hVariation: { kind: 'number', value: (r) => r.last24hVariation },
  last24hVariationAbsolute: { kind: 'number', value: (r) => r.last24hVariationAbs },
  sells: { kind: 'number', value: (r) => r.sells },
  buys: { kind: 'number', value: (r) => r.buys },
  swaps: { kind: 'number', value: (r) => r.swaps },
  isPossibleSpam: { kind: 'boolean', value: (r) => r.isPossibleSpam },
  totalSupply: { kind: 'decimal', value: (r) => r.totalSupply },
  fdv: { kind: 'number', value: (r) => r.fdv },
};

/** Code-point order of two strings (UTF-16 order differs only between surrogates and U+E000..U+FFFF). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1; // a surrogate pair encodes a code point above U+FFFF
    return x - y;
  }
  return a.length - b.length;
}

/** Exact order of two non-negative decimal strings (the DecimalString form: digits, optional fraction). */
export function compareDecimals(a: string, b: string): number {
  const [ai = '', af = ''] = a.split('.');
  const [bi = '', bf = ''] = b.split('.');
  const aw = ai.replace(/^0+(?=\d)/, '');
  const bw = bi.replace(/^0+(?=\d)/, '');
  if (aw.length !== bw.length) return aw.length - bw.length;
  if (aw !== bw) return aw < bw ? -1 : 1;
  const len = Math.max(af.length, bf.length);
  const x = af.padEnd(len, '0');
  const y = bf.padEnd(len, '0');
  return x === y ? 0 : x < y ? -1 : 1;
}

function compareNumbers(a: number, b: number): number {
  // PostgreSQL orders NaN above every other float8.
  const an = Number.isNaN(a);
  const bn = Number.isNaN(b);
  if (an || bn) return an === bn ? 0 : an ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

const compareAddress = (a: TokenRecord, b: TokenRecord) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);

export type Comparator = (a: TokenRecord, b: TokenRecord) => number;

/** The total order of `order`/`sort`: nulls last in both directions, ties by ascending address. */
export function comparator(order: OrderColumn, sort: 'asc' | 'desc'): Comparator {
  const { kind, value } = COLUMNS[order];
  const sign = sort === 'asc' ? 1 : -1;
  const compare =
    kind === 'text'
      ? (x: Value, y: Value) => compareCodePoints(x as string, y as string)
      : kind === 'decimal'
        ? (x: Value, y: Value) => compareDecimals(x as string, y as string)
        : kind === 'boolean'
          ? (x: Value, y: Value) => Number(x) - Number(y)
          : (x: Value, y: Value) => compareNumbers(x as number, y as number);
  return (a, b) => {
    const x = value(a);
    const y = value(b);
    if (x === null || y === null) {
      if (x !== y) return x === null ? 1 : -1;
      return compareAddress(a, b);
    }
    return sign * compare(x, y) || compareAddress(a, b);
  };
}

/** First index in sorted `list` whose element is not before `rec` (binary search). */
export function lowerBound(list: readonly TokenRecord[], rec: TokenRecord, cmp: Comparator): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp(list[mid]!, rec) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
