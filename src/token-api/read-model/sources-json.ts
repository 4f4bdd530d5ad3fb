import type { components } from '../../../generated/token-api/schema.js';
import type { Explained } from '../indexer/pricing.js';
import type { Judged, PricingSettings } from '../indexer/sources.js';
import type { TokenRecord } from './record.js';

/**
 * getTokenPriceSources' answer: the stored explanation of the token's current price (written by the
 * indexer with the price) and the confidence, whose freshness factor depends on the time of the request
 * (quantized to the minute, so the answer changes at most once a minute between writes).
 */

export type PriceSources = components['schemas']['PriceSources'];
type PoolSource = components['schemas']['PoolSource'];

/** What the indexer stores in price_sources.detail. */
export interface StoredExplanation {
  price: number;
  basis: Explained['basis'];
  params: PricingSettings;
  used: Judged[];
  /** The deepest MAX_EXCLUDED_LISTED of the pools left out. */
  excluded: Judged[];
  /** How many were left out; absent from rows stored before the cap (then `excluded` is all of them). */
  excludedCount?: number;
}

/**
 * Pools left out that an explanation lists: anyone can open thin pools of a token for little money, so
 * their number has no natural bound, and every pricing of the token stores its explanation.
 */
export const MAX_EXCLUDED_LISTED = 50;

/**
 * The explanation as stored: the pools left out cut to the deepest MAX_EXCLUDED_LISTED (they come deepest first), with
 * their count.
 */
export function storedExplanation(price: number, e: Explained, params: PricingSettings): StoredExplanation {
  return {
    price,
    basis: e.basis,
    params,
    used: e.used,
    excluded: e.excluded.slice(0, MAX_EXCLUDED_LISTED),
    excludedCount: e.excluded.length,
  };
}

const iso = (ms: number) => new Date(ms).toISOString();
const clamp01 = (x: number) => (Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0);

function poolSource(j: Judged): PoolSource {
  const out: PoolSource = {
    pool: j.pool,
    kind: j.kind,
    quoteToken: j.quote,
    route: j.route,
    quotePriceUsd: j.quotePriceUsd,
    liquidityUsd: j.liquidityUsd,
    weight: j.weight,
    spotPrice: j.spotPrice,
    blockNumber: j.block ?? null,
    stateTime: j.timeMs === undefined ? null : iso(j.timeMs),
  };
  if (j.reason !== undefined) out.reason = j.reason;
  if (j.medianOfOthers !== undefined) out.medianOfOthers = j.medianOfOthers;
  return out;
}

/** depth × agreement × freshness (see the operation's description in the spec). */
export function confidenceFactors(
  e: StoredExplanation,
  evaluatedAtMs: number,
  fallbackTimeMs: number,
): { depth: number; agreement: number; freshness: number } {
  const liquidity = e.used.reduce((s, u) => s + u.liquidityUsd, 0);
  const depth = clamp01(liquidity / e.params.referenceLiquidityUsd);
  const deviation =
    e.price > 0 ? e.used.reduce((s, u) => s + (u.weight * Math.abs(u.spotPrice - e.price)) / e.price, 0) : 0;
  const agreement = clamp01(1 - deviation / e.params.outlierShare);
  const freshness = clamp01(
    e.used.reduce(
      (s, u) =>
        s +
        u.weight *
          0.5 ** (Math.max(0, evaluatedAtMs - (u.timeMs ?? fallbackTimeMs)) / 1000 / e.params.staleAfterSeconds),
      0,
    ),
  );
  return { depth, agreement, freshness };
}

export function priceSources(rec: TokenRecord, stored: StoredExplanation | undefined, now: number): PriceSources {
  const evaluatedAt = Math.floor(now / 60_000) * 60_000;
  const updatedAtMs = rec.priceUpdatedAtUs === null ? evaluatedAt : rec.priceUpdatedAtUs / 1000;
  const base: PriceSources = {
    contractAddress: rec.address,
    price: rec.currentPrice,
    priceUpdatedAt: rec.priceUpdatedAt, // as getToken writes it
    basis: rec.currentPrice === null ? 'none' : 'unrecorded',
    confidence: null,
    factors: null,
    liquidityUsd: 0,
    evaluatedAt: iso(evaluatedAt),
    sources: [],
    excluded: [],
    excludedCount: 0,
  };
  if (rec.currentPrice === null || stored === undefined) return base;
  const { minLiquidityUsd, outlierShare, staleAfterSeconds, referenceLiquidityUsd } = stored.params;
  const answer: PriceSources = {
    ...base,
    basis: stored.basis,
    parameters: { minLiquidityUsd, outlierShare, staleAfterSeconds, referenceLiquidityUsd },
  };
  if (stored.basis === 'peg') return { ...answer, confidence: 1 };
  const factors = confidenceFactors(stored, evaluatedAt, updatedAtMs);
  return {
    ...answer,
    confidence: factors.depth * factors.agreement * factors.freshness,
    factors,
    liquidityUsd: stored.used.reduce((s, u) => s + u.liquidityUsd, 0),
    sources: stored.used.map(poolSource),
    excluded: stored.excluded.slice(0, MAX_EXCLUDED_LISTED).map(poolSource),
    excludedCount: stored.excludedCount ?? stored.excluded.length,
  };
}
