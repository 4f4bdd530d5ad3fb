import type { Knex } from 'knex';
import type { DbClient } from '../common/db/client.js';
import type { components } from '../../generated/token-api/schema.js';

export type Token = components['schemas']['Token'];
export type Price = components['schemas']['Price'];
export type OrderColumn = components['schemas']['OrderColumns'];

/** SQL ordering expression of each `order` value. The map is the whitelist: nothing else reaches SQL. */
const ORDER_SQL: Record<OrderColumn, string> = {
  name: 'name collate "C"',
  symbol: 'symbol collate "C"',
  decimals: 'decimals',
  contractAddress: 'address',
  currentPrice: 'current_price',
  priceUpdatedAt: 'price_updated_at',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  last24hVariation: 'last24h_variation',
  last24hVariationAbsolute: 'last24h_variation_abs',
  sells: 'sells',
  buys: 'buys',
  swaps: 'swaps',
  isPossibleSpam: 'is_possible_spam',
  totalSupply: 'total_supply_num',
  fdv: 'fdv',
};
export const ORDER_COLUMNS = Object.keys(ORDER_SQL) as OrderColumn[];

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

const TOKEN_COLUMNS = [
  'address', 'name', 'symbol', 'decimals', 'total_supply', 'current_price', 'price_updated_at', 'last24h_variation', 'fdv',
  'buys', 'sells', 'swaps', 'is_possible_spam', 'list_logo',
] as const;

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

/** Read side of the token API: every query the handlers run. */
export class TokenRepository {
  constructor(
    private readonly db: DbClient,
    private readonly schema: string,
  ) {}

  private tokens(knex: Knex) {
    return knex(`${this.schema}.tokens`);
  }

  async listTokens(q: ListQuery): Promise<{ rows: TokenRow[]; total: number }> {
    const filter = (b: Knex.QueryBuilder) => {
      if (q.isSecure !== undefined) b.where('is_secure', q.isSecure);
      if (q.addresses !== undefined) b.whereIn('address', q.addresses);
      return b;
    };
    const direction = q.sort === 'asc' ? 'asc' : 'desc';
    // Nulls last in both directions and an ascending address tie-break make the order total (stable pages).
    const orderBy = `${ORDER_SQL[q.order]} ${direction} nulls last, address asc`;
    return this.db.run(async (knex) => {
      const countRow = (await filter(this.tokens(knex)).count<{ count: string }[]>({ count: '*' }))[0];
      const total = Number(countRow?.count ?? 0);
      const offset = (q.page - 1) * q.limit;
      const rows =
        offset >= total
          ? []
          : ((await filter(this.tokens(knex).select(TOKEN_COLUMNS))
              .orderByRaw(orderBy)
              .limit(q.limit)
              .offset(offset)) as TokenRow[]);
      return { rows, total };
    });
  }

  async getToken(address: string): Promise<TokenRow | undefined> {
    return this.db.run(async (knex) => (await this.tokens(knex).select(TOKEN_COLUMNS).where('address', address).first()) as TokenRow | undefined);
  }

  async tokenExists(address: string): Promise<boolean> {
    return this.db.run(async (knex) => (await this.tokens(knex).select('address').where('address', address).first()) !== undefined);
  }

  /** Hourly points observed after `since`, oldest first, for each address (absent addresses are absent). */
  async prices(addresses: string[], since: Date): Promise<Map<string, Price[]>> {
    const rows = await this.db.run(
      (knex) =>
        knex(`${this.schema}.prices`)
          .select('token', 'price', 'observed_at')
          .whereIn('token', addresses)
          .where('observed_at', '>', since)
          .orderBy([{ column: 'token' }, { column: 'hour' }]) as Promise<{ token: string; price: number; observed_at: Date | string }[]>,
    );
    const out = new Map<string, Price[]>();
    for (const r of rows) {
      let list = out.get(r.token);
      if (!list) out.set(r.token, (list = []));
      list.push({ price: Number(r.price), timestamp: iso(r.observed_at) });
    }
    return out;
  }

  async ping(): Promise<void> {
    await this.db.run((knex) => knex.raw('select 1'), { retries: 0 });
  }
}
