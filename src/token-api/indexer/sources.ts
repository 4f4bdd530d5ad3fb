/**
 * Which pools make a token's price, and why the others do not (getTokenPriceSources documents the rules and
 * docs/token-api.md explains them). Pure functions over the candidates the oracle found, so the rules can be tested
 * without a chain and the stored explanation is exactly what priced the token.
 */

/** The pricing settings (see docs/token-api.md, "Price sources"). */
export interface PricingSettings {
  /** Pools whose quote side is worth less than this many USD do not price a token. */
  minLiquidityUsd: number;
  /** A pool straying more than this share from the weighted median of the others is an outlier. */
  outlierShare: number;
  /** A pool whose state is older than this (seconds) than the block priced is stale. */
  staleAfterSeconds: number;
  /** Liquidity (USD) at which the confidence's depth factor reaches 1. */
  referenceLiquidityUsd: number;
}

export const DEFAULT_PRICING = {
  outlierShare: 0.2,
  staleAfterSeconds: 604_800,
  referenceLiquidityUsd: 100_000,
} as const;

export type ExclusionReason = 'belowMinLiquidity' | 'stale' | 'outlier';

/** One pool of a token against a priced quote token. */
export interface Candidate {
  pool: string;
  kind: 'v2' | 'v3';
  quote: string;
  /** The quote token, then the other token of each hop's deepest used pool, ending at a stablecoin. */
  route: string[];
  quotePriceUsd: number;
  /** USD value of the quote side. */
  liquidityUsd: number;
  /** The token's USD price in this pool. */
  spotPrice: number;
  /** Block and time (epoch ms) of the pool state; undefined for states indexed before they were recorded. */
  block: number | undefined;
  timeMs: number | undefined;
}

export interface Judged extends Candidate {
  weight: number;
  reason?: ExclusionReason;
  medianOfOthers?: number;
}

export interface Judgement {
  price: number;
  used: Judged[];
  excluded: Judged[];
}

/** The lowest price at which the cumulative weight, prices ascending, reaches half of the total. */
export function weightedMedian(items: readonly { price: number; weight: number }[]): number | undefined {
  if (items.length === 0) return undefined;
  const sorted = [...items].sort((a, b) => a.price - b.price);
  const half = sorted.reduce((s, i) => s + i.weight, 0) / 2;
  let cumulative = 0;
  for (const i of sorted) {
    cumulative += i.weight;
    if (cumulative >= half) return i.price;
  }
  return sorted.at(-1)!.price;
}

const byDepth = (a: Judged, b: Judged) => b.liquidityUsd - a.liquidityUsd || (a.pool < b.pool ? -1 : 1);

/**
 * Applies the rules in order (minimum liquidity, staleness against the block priced at `atMs`, outliers against the
 * weighted median of the others) and prices from what remains, weighted by liquidity. Undefined when no pool remains.
 */
export function judge(candidates: readonly Candidate[], atMs: number, s: PricingSettings): Judgement | undefined {
  const excluded: Judged[] = [];
  const leaveOut = (c: Candidate, reason: ExclusionReason, medianOfOthers?: number) =>
    excluded.push(
      medianOfOthers === undefined ? { ...c, weight: 0, reason } : { ...c, weight: 0, reason, medianOfOthers },
    );

  let pool: Candidate[] = [];
  for (const c of candidates) {
    if (c.liquidityUsd < s.minLiquidityUsd) leaveOut(c, 'belowMinLiquidity');
    else pool.push(c);
  }
  // Stale only while a fresher pool remains: a token's only pools still price it (freshness shows the age).
  const isStale = (c: Candidate) => c.timeMs !== undefined && atMs - c.timeMs > s.staleAfterSeconds * 1000;
  if (pool.some((c) => !isStale(c))) {
    const fresh: Candidate[] = [];
    for (const c of pool) {
      if (isStale(c)) leaveOut(c, 'stale');
      else fresh.push(c);
    }
    pool = fresh;
  }
  const total = pool.reduce((sum, c) => sum + c.liquidityUsd, 0);
  const outliers = new Map<Candidate, number>();
  if (pool.length > 1) {
    for (const c of pool) {
      const others = pool.filter((o) => o !== c);
      const median = weightedMedian(others.map((o) => ({ price: o.spotPrice, weight: o.liquidityUsd })))!;
      const majority = c.liquidityUsd >= total - c.liquidityUsd;
      if (!majority && Math.abs(c.spotPrice - median) > s.outlierShare * median) outliers.set(c, median);
    }
  }
  // With no agreement to judge by (every pool an outlier) none is left out; the agreement factor shows it.
  if (outliers.size < pool.length) {
    for (const [c, median] of outliers) leaveOut(c, 'outlier', median);
    pool = pool.filter((c) => !outliers.has(c));
  }
  const weights = pool.reduce((sum, c) => sum + c.liquidityUsd, 0);
  if (pool.length === 0 || !(weights > 0)) return undefined;
  const price = pool.reduce((sum, c) => sum + c.spotPrice * c.liquidityUsd, 0) / weights;
  if (!Number.isFinite(price) || price < 0) return undefined;
  const used = pool.map((c) => ({ ...c, weight: c.liquidityUsd / weights })).sort(byDepth);
  return { price, used, excluded: excluded.sort(byDepth) };
}
