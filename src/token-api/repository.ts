import type { DbClient } from '../common/db/client.js';
import type { components } from '../../generated/token-api/schema.js';

export type Token = components['schemas']['Token'];
export type Price = components['schemas']['Price'];
export type OrderColumn = components['schemas']['OrderColumns'];

export interface TokenRow {
  address: string;
  name: string;
  symbol: string;
  decimals: number;
  total_supply: string;
  current_price: number | null;
  price_updated_at: Date | string | null;
  last24h_variation: number | null;
  fdv: number | null;
  buys: string | number;
  sells: string | number;
  swaps: string | number;
  is_possible_spam: boolean | null;
  list_logo: string | null;
}

const iso = (v: Date | string) => (v instanceof Date ? v : new Date(v)).toISOString();

/** A stored row as the API's Token; `logoBase` is where generated logos are served. */
export function toToken(row: TokenRow, logoBase: string): Token {
  const token: Token = {
    name: row.name,
    symbol: row.symbol,
    decimals: row.decimals,
    logo: row.list_logo ?? `${logoBase}/logos/${row.address}.svg`,
    contractAddress: row.address,
    currentPrice: row.current_price,
    priceUpdatedAt: row.price_updated_at === null ? null : iso(row.price_updated_at),
    last24hVariation: row.last24h_variation,
    info: {
      sells: Number(row.sells),
      buys: Number(row.buys),
      swaps: Number(row.swaps),
      fdv: row.fdv,
      totalSupply: row.total_supply,
    },
  };
  if (row.is_possible_spam !== null) token.isPossibleSpam = row.is_possible_spam;
  return token;
}

export interface ListQuery {
  page: number;
  limit: number;
  isSecure: boolean | undefined;
  addresses: string[] | undefined;
  order: OrderColumn;
  sort: 'asc' | 'desc';
}

/** The token API's direct database access: only readiness pings it (answers come from the read model). */
export class TokenRepository {
  constructor(private readonly db: DbClient) {}

  async ping(): Promise<void> {
    await this.db.query('token_api.ping', (knex) => knex.raw('select 1'), { retries: 0 });
  }
}
