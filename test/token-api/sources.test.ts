import { describe, expect, it } from 'vitest';
import { judge, weightedMedian, type Candidate } from '../../src/token-api/indexer/sources.js';
import { MAX_EXCLUDED_LISTED, storedExplanation } from '../../src/token-api/read-model/sources-json.js';

/** The rules of getTokenPriceSources on hand-made pools: the edges the devnet tests do not reach. */
const settings = {
  minLiquidityUsd: 1_000,
  outlierShare: 0.2,
  staleAfterSeconds: 3_600,
  referenceLiquidityUsd: 100_000,
};
const T = 10_000_000;
const pool = (name: string, spotPrice: number, liquidityUsd: number, timeMs: number | undefined = T): Candidate => ({
  pool: name,
  kind: 'v2',
  quote: 'usd',
  route: ['usd'],
  quotePriceUsd: 1,
  liquidityUsd,
  spotPrice,
  block: 1,
  timeMs,
});
const reasons = (j: ReturnType<typeof judge>) => Object.fromEntries(j!.excluded.map((x) => [x.pool, x.reason]));

describe('price sources rules', () => {
  it('behavior: the weighted median is the lowest price reaching half of the weight', () => {
    expect(
      weightedMedian([
        { price: 3, weight: 1 },
        { price: 1, weight: 1 },
      ]),
    ).toBe(1);
    expect(
      weightedMedian([
        { price: 3, weight: 2 },
        { price: 1, weight: 1 },
      ]),
    ).toBe(3);
    expect(weightedMedian([])).toBeUndefined();
  });

  it('behavior: of two pools that disagree, the one holding the majority of the liquidity prices the token', () => {
    const j = judge([pool('deep', 2, 100_000), pool('small', 6, 20_000)], T, settings)!;
    expect(j.price).toBe(2);
    expect(reasons(j)).toEqual({ small: 'outlier' });
    expect(j.excluded[0]!.medianOfOthers).toBe(2);
  });

  it('behavior: when no pool agrees with the others, none is left out as an outlier', () => {
    const j = judge([pool('a', 1, 10_000), pool('b', 2, 10_000), pool('c', 4, 10_000)], T, settings)!;
    expect(j.used.map((u) => u.pool).sort()).toEqual(['a', 'b', 'c']);
    expect(j.price).toBeCloseTo(7 / 3, 12);
  });

  it('behavior: stale pools are left out only while a fresher one remains; unknown state times are never stale', () => {
    const old = T - 2 * 3_600_000;
    expect(reasons(judge([pool('fresh', 2, 5_000), pool('old', 2, 50_000, old)], T, settings))).toEqual({
      old: 'stale',
    });
    expect(judge([pool('old', 2, 50_000, old)], T, settings)!.used.map((u) => u.pool)).toEqual(['old']);
    expect(judge([pool('fresh', 2, 5_000), pool('unknown', 2, 50_000, undefined)], T, settings)!.used).toHaveLength(2);
  });

  it('behavior: below the minimum liquidity a pool never prices, even alone', () => {
    expect(judge([pool('thin', 200, 999)], T, settings)).toBeUndefined();
    const j = judge([pool('thin', 200, 999), pool('ok', 2, 1_000)], T, settings)!;
    expect(j.price).toBe(2);
    expect(reasons(j)).toEqual({ thin: 'belowMinLiquidity' });
    expect(j.used[0]!.weight).toBe(1);
  });
});

describe('price sources answer bounds', () => {
  it('behavior: an explanation lists the 50 deepest pools left out and counts them all, so a flood of thin pools cannot grow it', () => {
    const thin = Array.from({ length: 5_000 }, (_, i) => pool(`thin${String(i).padStart(4, '0')}`, 9, 1 + i / 10));
    const j = judge([pool('deep', 2, 100_000), ...thin], T, settings)!;
    expect(j.price).toBe(2);
    const stored = storedExplanation(j.price, { ...j, basis: 'pools' }, settings);
    expect(stored.excluded).toHaveLength(MAX_EXCLUDED_LISTED);
    expect(stored.excludedCount).toBe(5_000);
    // Deepest first: the last thin pool holds the most.
    expect(stored.excluded[0]!.pool).toBe('thin4999');
    expect(JSON.stringify(stored).length).toBeLessThan(40_000);
  });
});
