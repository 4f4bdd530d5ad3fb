import type { Knex } from 'knex';
import { formatDecimal } from '../decimal.js';
import { hourOf, windowHours } from '../read-model/series.js';
import type { TokenMetadata } from './metadata.js';
import type { Observation, PoolState } from './pricing.js';
import { chunks, pruneCandles } from './candles-store.js';

/** Write side of the token schema, used only by the indexer (inside its transactions). */

export interface NewToken extends Pick<TokenMetadata, 'name' | 'symbol' | 'decimals' | 'totalSupply'> {
  address: string;
  metadataOk: boolean;
  isPossibleSpam: boolean;
  listed: boolean;
  listLogo: string | null;
}

export interface NewPool extends PoolState {
  factory: string;
  fee: number | null;
  createdBlock: number;
}

export interface SwapRow {
  tx_hash: string;
  log_index: number;
  block_number: number;
  block_time: Date;
  pool: string;
  token_sold: string;
  token_bought: string;
}

type TokenDecimals = { address: string; decimals: number };
type ListingInput = { address: string; name: string; symbol: string; metadata_ok: boolean };

export class IndexerStore {
  constructor(readonly schema: string) {}

  /** A table of this store's schema, qualified. */
  private table(name: string) {
    return `${this.schema}.${name}`;
  }

  async cursor(knex: Knex): Promise<number | undefined> {
    const row = (await knex(this.table('cursors')).where('name', 'main').first('block')) as
      { block: string } | undefined;
    return row ? Number(row.block) : undefined;
  }

  async setCursor(knex: Knex, block: number): Promise<void> {
    await knex(this.table('cursors'))
      .insert({ name: 'main', block, updated_at: knex.fn.now() })
      .onConflict('name')
      .merge();
  }

  async loadPools(knex: Knex): Promise<PoolState[]> {
    const rows = (await knex(this.table('pools')).select(
      'address',
      'kind',
      'token0',
      'token1',
      'reserve0',
      'reserve1',
      'sqrt_price_x96',
      'liquidity',
      'state_block',
      'state_time',
    )) as {
      address: string;
      kind: 'v2' | 'v3';
      token0: string;
      token1: string;
      reserve0: string | null;
      reserve1: string | null;
      sqrt_price_x96: string | null;
      liquidity: string | null;
      state_block: string | null;
      state_time: Date | string | null;
    }[];
    const big = (v: string | null) => (v === null ? undefined : BigInt(v));
    return rows.map((r) => ({
      address: r.address,
      kind: r.kind,
      token0: r.token0,
      token1: r.token1,
      reserve0: big(r.reserve0),
      reserve1: big(r.reserve1),
      sqrtPriceX96: big(r.sqrt_price_x96),
      liquidity: big(r.liquidity),
      stateBlock: r.state_block === null ? undefined : Number(r.state_block),
      stateTimeMs: r.state_time === null ? undefined : new Date(r.state_time).getTime(),
    }));
  }

  async loadTokens(knex: Knex): Promise<TokenDecimals[]> {
    return (await knex(this.table('tokens')).select('address', 'decimals')) as TokenDecimals[];
  }

  async insertTokens(knex: Knex, tokens: NewToken[]): Promise<void> {
    for (const part of chunks(tokens, 500)) {
      await knex(this.table('tokens'))
        .insert(
          part.map((t) => {
            const supply = formatDecimal(t.totalSupply, t.decimals);
            return {
              address: t.address,
              name: t.name,
              symbol: t.symbol,
              decimals: t.decimals,
              total_supply_raw: t.totalSupply.toString(),
              total_supply: supply,
              total_supply_num: supply,
              metadata_ok: t.metadataOk,
              is_possible_spam: t.isPossibleSpam,
              listed: t.listed,
              list_logo: t.listLogo,
              supply_read_at: knex.fn.now(),
            };
          }),
        )
        .onConflict('address')
        .ignore();
    }
  }

  async insertPools(knex: Knex, pools: NewPool[]): Promise<void> {
    for (const part of chunks(pools, 500)) {
      await knex(this.table('pools'))
        .insert(
          part.map((p) => ({
            address: p.address,
            kind: p.kind,
            factory: p.factory,
            token0: p.token0,
            token1: p.token1,
            fee: p.fee,
            created_block: p.createdBlock,
          })),
        )
        .onConflict('address')
        .ignore();
    }
  }

  async savePoolStates(knex: Knex, pools: PoolState[]): Promise<void> {
    if (pools.length === 0) return;
    const s = (v: bigint | undefined) => (v === undefined ? null : v.toString());
    for (const part of chunks(pools, 1_000)) {
      const json = JSON.stringify(
        part.map((p) => ({
          a: p.address,
          r0: s(p.reserve0),
          r1: s(p.reserve1),
          sp: s(p.sqrtPriceX96),
          l: s(p.liquidity),
          b: p.stateBlock ?? null,
          t: p.stateTimeMs === undefined ? null : new Date(p.stateTimeMs).toISOString(),
        })),
      );
      await knex.raw(
        `update ?? as p set reserve0 = v.r0::numeric, reserve1 = v.r1::numeric, sqrt_price_x96 = v.sp::numeric, liquidity = v.l::numeric,
           state_block = v.b, state_time = v.t
         from jsonb_to_recordset(?::jsonb) as v(a text, r0 text, r1 text, sp text, l text, b bigint, t timestamptz) where p.address = v.a`,
        [this.table('pools'), json],
      );
    }
  }

  /**
   * Inserts swaps once each (unique tx hash + log index) and adds only the new ones to the counters.
   * Returns the `txHash:logIndex` keys of the swaps inserted.
   */
  async recordSwaps(knex: Knex, swaps: SwapRow[]): Promise<Set<string>> {
    const counts = new Map<string, { buys: number; sells: number; swaps: number }>();
    const bump = (token: string, key: 'buys' | 'sells') => {
      const c = counts.get(token) ?? { buys: 0, sells: 0, swaps: 0 };
      c[key] += 1;
      c.swaps += 1;
      counts.set(token, c);
    };
    const inserted = new Set<string>();
    type Inserted = Pick<SwapRow, 'tx_hash' | 'log_index' | 'token_sold' | 'token_bought'>;
    for (const part of chunks(swaps, 1_000)) {
      const rows = (await knex(this.table('swaps'))
        .insert(part)
        .onConflict(['tx_hash', 'log_index'])
        .ignore()
        .returning(['tx_hash', 'log_index', 'token_sold', 'token_bought'])) as Inserted[];
      for (const r of rows) {
        inserted.add(`${r.tx_hash}:${r.log_index}`);
        bump(r.token_sold, 'sells');
        bump(r.token_bought, 'buys');
      }
    }
    if (counts.size > 0) {
      const json = JSON.stringify([...counts].map(([a, c]) => ({ a, b: c.buys, s: c.sells, w: c.swaps })));
      await knex.raw(
        `update ?? as t set buys = t.buys + v.b, sells = t.sells + v.s, swaps = t.swaps + v.w, updated_at = now()
         from jsonb_to_recordset(?::jsonb) as v(a text, b bigint, s bigint, w bigint) where t.address = v.a`,
        [this.table('tokens'), json],
      );
    }
    return inserted;
  }

  /** Hourly rows keep the last observation of their hour; the token row gets the latest price and fdv. */
  async recordObservations(knex: Knex, observations: Observation[]): Promise<void> {
    if (observations.length === 0) return;
    const perHour = new Map<string, Observation>();
    const latest = new Map<string, Observation>();
    for (const o of observations) {
      const key = `${o.token}|${hourOf(o.at.getTime())}`;
      const prev = perHour.get(key);
      if (!prev || prev.at <= o.at) perHour.set(key, o);
      const l = latest.get(o.token);
      if (!l || l.at <= o.at) latest.set(o.token, o);
    }
    for (const part of chunks([...perHour.values()], 1_000)) {
      await knex(this.table('prices'))
        .insert(
          part.map((o) => ({
            token: o.token,
            hour: new Date(hourOf(o.at.getTime())),
            price: o.price,
            observed_at: o.at,
          })),
        )
        .onConflict(['token', 'hour'])
        .merge(['price', 'observed_at'])
        .whereRaw('prices.observed_at <= excluded.observed_at');
    }
    for (const part of chunks([...latest.values()], 1_000)) {
      const json = JSON.stringify(part.map((o) => ({ a: o.token, p: o.price, at: o.at.toISOString() })));
      await knex.raw(
        `update ?? as t set current_price = v.p, price_updated_at = v.at, fdv = v.p * t.total_supply_num::float8, updated_at = now()
         from jsonb_to_recordset(?::jsonb) as v(a text, p float8, at timestamptz)
         where t.address = v.a and (t.price_updated_at is null or t.price_updated_at <= v.at)`,
        [this.table('tokens'), json],
      );
    }
  }

  async updateSupplies(knex: Knex, supplies: { address: string; raw: bigint; decimals: number }[]): Promise<void> {
    if (supplies.length === 0) return;
    const json = JSON.stringify(
      supplies.map((s) => ({ a: s.address, r: s.raw.toString(), d: formatDecimal(s.raw, s.decimals) })),
    );
    await knex.raw(
      `update ?? as t set total_supply_raw = v.r::numeric, total_supply = v.d, total_supply_num = v.d::numeric,
         fdv = t.current_price * v.d::float8, supply_read_at = now(),
         updated_at = case when t.total_supply = v.d then t.updated_at else now() end
       from jsonb_to_recordset(?::jsonb) as v(a text, r text, d text) where t.address = v.a`,
      [this.table('tokens'), json],
    );
  }

  async tokensDueForSupply(knex: Knex, olderThan: Date, limit: number): Promise<TokenDecimals[]> {
    return (await knex(this.table('tokens'))
      .select('address', 'decimals')
      .where((b) => b.whereNull('supply_read_at').orWhere('supply_read_at', '<', olderThan))
      .orderBy('supply_read_at', 'asc')
      .limit(limit)) as TokenDecimals[];
  }

  /** Listing flags, logos and spam verdicts after a token-list (re)load. */
  async applyListing(
    knex: Knex,
    rows: { address: string; listed: boolean; logo: string | null; spam: boolean }[],
  ): Promise<void> {
    for (const part of chunks(rows, 1_000)) {
      const json = JSON.stringify(part.map((r) => ({ a: r.address, l: r.listed, g: r.logo, s: r.spam })));
      await knex.raw(
        `update ?? as t set listed = v.l, list_logo = v.g, is_possible_spam = v.s, updated_at = now()
         from jsonb_to_recordset(?::jsonb) as v(a text, l boolean, g text, s boolean)
         where t.address = v.a and (t.listed, t.list_logo, t.is_possible_spam) is distinct from (v.l, v.g, v.s)`,
        [this.table('tokens'), json],
      );
    }
  }

  async listingInputs(knex: Knex): Promise<ListingInput[]> {
    return (await knex(this.table('tokens')).select('address', 'name', 'symbol', 'metadata_ok')) as ListingInput[];
  }

  /**
   * Figures that depend on the clock: the 24 h variation and the secure flag (listed and market cap above
   * the threshold). The variation compares the last and the first point of the hourly series the API
   * serves (read-model/series.ts): the first point is the price carried to the window's first hour (the
   * newest row at or before it), or the token's first row when it was first priced inside the window.
   * Old hourly rows are pruned, keeping per token the newest one at or before the cutoff (the carried price).
   */
  async refreshDerived(knex: Knex, now: Date, secureMinMarketCapUsd: number): Promise<void> {
    const cutoff = new Date(now.getTime() - 24 * 3_600_000);
    const { first: firstHour, last: lastHour } = windowHours(now.getTime());
    const tokens = this.table('tokens');
    const prices = this.table('prices');
    await knex.raw(
      `with carried as (
         select distinct on (token) token, price from ?? where hour <= ? order by token, hour desc
       ), opening as (
         select distinct on (token) token, price from ?? where hour > ? and hour <= ? order by token, hour asc
       ), closing as (
         select distinct on (token) token, price from ?? where hour <= ? order by token, hour desc
       ), calc as (
         select t.address,
           case when coalesce(c.price, o.price) > 0 and l.price is not null
             then (l.price - coalesce(c.price, o.price)) / coalesce(c.price, o.price) * 100 end as v,
           (t.listed and coalesce(t.fdv, 0) > ?) as secure
         from ?? t left join carried c on c.token = t.address left join opening o on o.token = t.address left join closing l on l.token = t.address
       )
       update ?? as t set last24h_variation = c.v, last24h_variation_abs = abs(c.v), is_secure = c.secure, updated_at = now()
       from calc c
       where c.address = t.address and (t.last24h_variation is distinct from c.v or t.is_secure is distinct from c.secure)`,
      [
        prices,
        new Date(firstHour),
        prices,
        new Date(firstHour),
        new Date(lastHour),
        prices,
        new Date(lastHour),
        secureMinMarketCapUsd,
        tokens,
        tokens,
      ],
    );
    await knex.raw(
      `delete from ?? as p where p.observed_at <= ?
         and exists (select 1 from ?? q where q.token = p.token and q.observed_at <= ? and q.observed_at > p.observed_at)`,
      [prices, cutoff, prices, cutoff],
    );
    await pruneCandles(knex, this.schema, now);
  }
}
