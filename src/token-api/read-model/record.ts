import { toToken, type TokenRow } from '../repository.js';

/**
 * One token as the read model holds it: the stored row (for the response, built exactly as before) plus
 * the values the orderings compare. Records are immutable: a change replaces the record, so an index can
 * still find the old one by its old values.
 */
export interface TokenRecord {
  readonly address: string;
  readonly name: string;
  readonly symbol: string;
  readonly decimals: number;
  readonly totalSupply: string;
  readonly currentPrice: number | null;
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
  readonly row: TokenRow;
  /** The Token's JSON, UTF-8 encoded, made on first use (the logo base is known only once the server listens). */
  json?: { base: string; bytes: Buffer };
}

/** A tokens row as the read model's loader selects it (see source.ts). */
export interface LoadedTokenRow extends TokenRow {
  last24h_variation_abs: number | null;
  is_secure: boolean;
  price_updated_us: string | null;
  created_us: string;
  updated_us: string;
  change_seq: string;
}

const num = (v: string | null) => (v === null ? null : Number(v));

export function toRecord(r: LoadedTokenRow): TokenRecord {
  return {
    address: r.address,
    name: r.name,
    symbol: r.symbol,
    decimals: r.decimals,
    totalSupply: r.total_supply,
    currentPrice: r.current_price,
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
    row: {
      address: r.address,
      name: r.name,
      symbol: r.symbol,
      decimals: r.decimals,
      total_supply: r.total_supply,
      current_price: r.current_price,
      price_updated_at: r.price_updated_at,
      last24h_variation: r.last24h_variation,
      fdv: r.fdv,
      buys: r.buys,
      sells: r.sells,
      swaps: r.swaps,
      is_possible_spam: r.is_possible_spam,
      list_logo: r.list_logo,
    },
  };
}

/**
 * The record's Token as UTF-8 JSON, cached on the record: responses are assembled by copying these bytes
 * (encoding a 20–130 KB string per response was the largest cost of a page or a price batch).
 */
export function tokenJson(rec: TokenRecord, base: string): Buffer {
  if (rec.json?.base !== base) rec.json = { base, bytes: Buffer.from(JSON.stringify(toToken(rec.row, base))) };
  return rec.json.bytes;
}
