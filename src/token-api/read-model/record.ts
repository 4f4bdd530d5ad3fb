import type { Token } from '../repository.js';

/**
 * One token as the read model holds it: what the Token response says (built exactly as before) and the
 * values the orderings compare. Records are immutable: a change replaces the record, so an index can
 * still find the old one by its old values.
 */
export interface TokenRecord {
  readonly address: string;
  readonly name: string;
  readonly symbol: string;
  readonly decimals: number;
  readonly totalSupply: string;
  readonly currentPrice: number | null;
  /** As the Token says it (ISO 8601), and in microseconds for the ordering. */
  readonly priceUpdatedAt: string | null;
  readonly priceUpdatedAtUs: number | null;
  readonly createdAtUs: number;
  readonly updatedAtUs: number;
  readonly last24hVariation: number | null;
  readonly last24hVariationAbs: number | null;
  readonly fdv: number | null;
  readonly buys: number;
  readonly sells: number;
  readonly swaps: number;
  readonly isPossibleSpam: boolean | null;
  readonly isSecure: boolean;
  /** The token list's logo; null: the generated one. */
  readonly listLogo: string | null;
  /** The Token's JSON, UTF-8 encoded, made on first use (the logo base is known only once the server listens). */
  json?: { base: string; bytes: Buffer };
}

/** A tokens row as the read model's loader selects it (see source.ts). */
export interface LoadedTokenRow {
  address: string;
  name: string;
  symbol: string;
  decimals: number;
  total_supply: string;
  current_price: number | null;
  price_updated_at: Date | string | null;
  last24h_variation: number | null;
  last24h_variation_abs: number | null;
  fdv: number | null;
  buys: string | number;
  sells: string | number;
  swaps: string | number;
  is_possible_spam: boolean | null;
  is_secure: boolean;
  list_logo: string | null;
  price_updated_us: string | null;
  created_us: string;
  updated_us: string;
  change_seq: string;
}

const num = (v: string | null) => (v === null ? null : Number(v));
const iso = (v: Date | string) => (v instanceof Date ? v : new Date(v)).toISOString();

export function toRecord(r: LoadedTokenRow): TokenRecord {
  return {
    address: r.address,
    name: r.name,
    symbol: r.symbol,
    decimals: r.decimals,
    totalSupply: r.total_supply,
    currentPrice: r.current_price,
    priceUpdatedAt: r.price_updated_at === null ? null : iso(r.price_updated_at),
    priceUpdatedAtUs: num(r.price_updated_us),
    createdAtUs: Number(r.created_us),
    updatedAtUs: Number(r.updated_us),
    last24hVariation: r.last24h_variation,
    last24hVariationAbs: r.last24h_variation_abs,
    fdv: r.fdv,
    buys: Number(r.buys),
    sells: Number(r.sells),
    swaps: Number(r.swaps),
    isPossibleSpam: r.is_possible_spam,
    isSecure: r.is_secure,
    listLogo: r.list_logo,
  };
}

/** The record as the API's Token; `logoBase` is where generated logos are served. */
function toToken(rec: TokenRecord, logoBase: string): Token {
  const token: Token = {
    name: rec.name,
    symbol: rec.symbol,
    decimals: rec.decimals,
    logo: rec.listLogo ?? `${logoBase}/logos/${rec.address}.svg`,
    contractAddress: rec.address,
    currentPrice: rec.currentPrice,
    priceUpdatedAt: rec.priceUpdatedAt,
    last24hVariation: rec.last24hVariation,
    info: { sells: rec.sells, buys: rec.buys, swaps: rec.swaps, fdv: rec.fdv, totalSupply: rec.totalSupply },
  };
  if (rec.isPossibleSpam !== null) token.isPossibleSpam = rec.isPossibleSpam;
  return token;
}

/**
 * The record's Token as UTF-8 JSON, cached on the record: responses are assembled by copying these bytes
 * (encoding a 20–130 KB string per response was the largest cost of a page or a price batch).
 */
export function tokenJson(rec: TokenRecord, base: string): Buffer {
  if (rec.json?.base !== base) rec.json = { base, bytes: Buffer.from(JSON.stringify(toToken(rec, base))) };
  return rec.json.bytes;
}
