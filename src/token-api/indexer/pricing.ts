import { toFloat } from '../decimal.js';
import { judge, type Candidate, type Judgement, type PricingSettings } from './sources.js';

/** In-memory state of one pool, as the indexer keeps it up to date from Sync (V2) and Swap (V3) events. */
export interface PoolState {
  address: string;
  kind: 'v2' | 'v3';
  token0: string;
  token1: string;
  reserve0?: bigint;
  reserve1?: bigint;
  sqrtPriceX96?: bigint;
  liquidity?: bigint;
  /** Block and time (epoch ms) of the last Sync or Swap that set the state; unknown for older rows. */
  stateBlock?: number;
  stateTimeMs?: number;
}

const Q96 = 2 ** 96;

/**
 * Spot price of token0 in token1 and the (virtual) reserves of both sides in whole tokens. V2 reads the reserves; V3
 * derives virtual reserves from liquidity L and √P: x = L/√P, y = L·√P.
 */
export function poolSpot(
  pool: PoolState,
  dec0: number,
  dec1: number,
): { price0In1: number; amount0: number; amount1: number } | undefined {
  if (pool.kind === 'v2') {
    if (!pool.reserve0 || !pool.reserve1) return undefined;
    const amount0 = toFloat(pool.reserve0, dec0);
    const amount1 = toFloat(pool.reserve1, dec1);
    return amount0 > 0 && amount1 > 0 ? { price0In1: amount1 / amount0, amount0, amount1 } : undefined;
  }
  if (!pool.sqrtPriceX96 || pool.liquidity === undefined) return undefined;
  const sqrt = Number(pool.sqrtPriceX96) / Q96; // √(token1 raw per token0 raw)
  const price0In1 = sqrt * sqrt * 10 ** (dec0 - dec1);
  const liquidity = Number(pool.liquidity);
  const amount0 = liquidity / sqrt / 10 ** dec0;
  const amount1 = (liquidity * sqrt) / 10 ** dec1;
  return Number.isFinite(price0In1) && price0In1 > 0 ? { price0In1, amount0, amount1 } : undefined;
}

export interface PricingInput {
  pools: ReadonlyMap<string, PoolState>;
  poolsByToken: ReadonlyMap<string, ReadonlySet<string>>;
  decimals: (token: string) => number | undefined;
}

/** A price and what made it: the pools used and left out (sources.ts), or the peg of a stablecoin. */
export interface Explained extends Judgement {
  basis: 'pools' | 'peg';
}

/** Quote tokens' prices and explanations (stablecoins included, pegged); quotes without a route are absent. */
export type QuoteBook = Map<string, Explained>;

const PEG: Explained = Object.freeze({ price: 1, basis: 'peg', used: [], excluded: [] }) as Explained;

/**
 * USD prices from pools. Stablecoins are 1. Other quote tokens are priced through their pools with tokens already
 * priced (a route to a stablecoin, hop by hop). Every other token is priced only against quote tokens, so two unknown
 * tokens can never price each other. The pools of a token are judged by sources.ts (minimum liquidity, staleness,
 * outliers) and the rest combined weighted by the USD value of their quote side.
 */
export class PriceOracle {
  constructor(
    readonly stables: ReadonlySet<string>,
    readonly quotes: ReadonlySet<string>,
    readonly settings: PricingSettings,
  ) {}

  isQuote(token: string): boolean {
    return this.stables.has(token) || this.quotes.has(token);
  }

  /** Prices of every quote token at block time `atMs`. */
  quotePrices(input: PricingInput, atMs: number): QuoteBook {
    let known: QuoteBook = new Map([...this.stables].map((s) => [s, PEG]));
    const others = [...this.quotes].filter((q) => !this.stables.has(q));
    // Each round may price quotes one hop further from a stablecoin.
    for (let round = 0; round < others.length; round++) {
      const next = new Map(known);
      for (const q of others) {
        const p = this.priceAgainst(q, input, known, atMs);
        if (p === undefined) next.delete(q);
        else next.set(q, p);
      }
      const changed = others.some((q) => next.get(q)?.price !== known.get(q)?.price);
      known = next;
      if (!changed) break;
    }
    return known;
  }

  /** USD price of `token` and its explanation, or undefined when no usable pool exists. */
  explain(token: string, input: PricingInput, quotes: QuoteBook, atMs: number): Explained | undefined {
    if (this.stables.has(token)) return PEG;
    if (this.quotes.has(token)) return quotes.get(token);
    return this.priceAgainst(token, input, quotes, atMs);
  }

  /** The quote, then the other token of each hop's deepest used pool, to a stablecoin. */
  private route(quote: string, quotes: QuoteBook): string[] {
    const route = [quote];
    for (let q = quote; !this.stables.has(q) && route.length <= quotes.size;) {
      const via = quotes.get(q)?.used[0]?.quote;
      if (via === undefined || route.includes(via)) break;
      route.push((q = via));
    }
    return route;
  }

  private candidates(token: string, input: PricingInput, quotes: QuoteBook): Candidate[] {
    const out: Candidate[] = [];
    for (const address of input.poolsByToken.get(token) ?? []) {
      const pool = input.pools.get(address);
      if (!pool) continue;
      const isToken0 = pool.token0 === token;
      const other = isToken0 ? pool.token1 : pool.token0;
      if (other === token) continue;
      const otherUsd = quotes.get(other)?.price;
      if (otherUsd === undefined) continue;
      const dec0 = input.decimals(pool.token0);
      const dec1 = input.decimals(pool.token1);
      if (dec0 === undefined || dec1 === undefined) continue;
      const spot = poolSpot(pool, dec0, dec1);
      if (!spot) continue;
      const priceInOther = isToken0 ? spot.price0In1 : 1 / spot.price0In1;
      const liquidityUsd = (isToken0 ? spot.amount1 : spot.amount0) * otherUsd;
      if (!(liquidityUsd > 0) || !Number.isFinite(priceInOther) || !Number.isFinite(liquidityUsd)) continue;
      out.push({
        pool: address,
        kind: pool.kind,
        quote: other,
        route: this.route(other, quotes),
        quotePriceUsd: otherUsd,
        liquidityUsd,
        spotPrice: priceInOther * otherUsd,
        block: pool.stateBlock,
        timeMs: pool.stateTimeMs,
      });
    }
    return out;
  }

  private priceAgainst(token: string, input: PricingInput, quotes: QuoteBook, atMs: number): Explained | undefined {
    const judged = judge(this.candidates(token, input, quotes), atMs, this.settings);
    return judged && { price: judged.price, basis: 'pools', used: judged.used, excluded: judged.excluded };
  }
}

/** A token's price at a time, as the indexer stores it (prices, candles and price_sources). */
export interface Observation {
  token: string;
  price: number;
  at: Date;
  /** The block priced, and what made the price (written to price_sources). */
  block?: number;
  explained?: Explained;
}
