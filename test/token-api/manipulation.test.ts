import { parseUnits } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../../generated/token-api/client.js';
import { TestToken__factory } from '../../generated/contracts/types/index.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import type { TokenIndexerConfig } from '../../src/token-api/config.js';
import { addLiquidity, buildWorld, setNextTimestamp, swap, type World } from './chain.js';
import { expectSpecResponse, startTestApi, type TestApi } from './helpers.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * Manipulation of a token's price on the devnet's DEX (DexFactory/DexPair/DexRouter on a real anvil), read
 * back through getToken, getTokenPriceSources, getTokenPrices and getTokenCandles: a thin pool pushed 100×,
 * a pool pushed 3× (an outlier), a real trade in the deep pool, and single-block spikes inside and at the
 * end of an hour. Chain time is set hour by hour in the past, so every phase lands in a known UTC hour.
 */
type Token = components['schemas']['Token'];
type Sources = components['schemas']['PriceSources'];
type Candle = components['schemas']['Candle'];
type Point = components['schemas']['Price'];

const HOUR = 3_600_000;
const H0 = Math.floor(Date.now() / HOUR) * HOUR;
/** `m` minutes (and `s` seconds) into the hour that began `h` hours before the current one. */
const at = (h: number, m: number, s = 0) => new Date(H0 - h * HOUR + m * 60_000 + s * 1000);
const e = (n: number | string, d = 18) => parseUnits(String(n), d);
const MAX = 2n ** 256n - 1n;

let anvil: Anvil;
let w: World;
let t: TestApi;
let config: TokenIndexerConfig;
let MAN: string;
let USDX: string;
let USDY: string;
const pools: Record<'deep' | 'weth' | 'usdx' | 'thin', string> = { deep: '', weth: '', usdx: '', thin: '' };
let baseline = 0;

const get = async <T>(operationId: string, path: string) =>
  (await expectSpecResponse(operationId, await fetch(`${t.url}${path}`))) as T;
const token = () => get<Token>('getToken', `/tokens/${MAN}`);
const sources = () => get<Sources>('getTokenPriceSources', `/tokens/${MAN}/price-sources`);
const sync = () => t.api.indexer!.syncToHead();
const balance = (address: string) => TestToken__factory.connect(address, w.provider).balanceOf(w.owner);

beforeAll(async () => {
  anvil = await startAnvil({ port: 0, chainId: 31_337, timestamp: Math.floor(at(12, 0).getTime() / 1000) });
  w = await buildWorld(createProvider(anvil.url, 31_337));
  const deploy = async (name: string, symbol: string, decimals: number, supply: number) => {
    const c = await new TestToken__factory(w.deployer).deploy(name, symbol, decimals, w.owner, e(supply, decimals));
    await c.waitForDeployment();
    const address = (await c.getAddress()).toLowerCase();
    await mined(TestToken__factory.connect(address, w.deployer).approve(await w.router.getAddress(), MAX));
    return address;
  };
  MAN = await deploy('Manipulated', 'MAN', 18, 10_000_000);
  USDX = await deploy('USD X', 'USDX', 6, 100_000_000);
  USDY = await deploy('USD Y', 'USDY', 6, 100_000_000);
  const { USDS, WETH } = w.tokens;
  await setNextTimestamp(w, at(11, 10));
  await addLiquidity(w, WETH, USDS, e(100), e(300_000, 6));
  await addLiquidity(w, MAN, USDS, e(100_000), e(200_000, 6)); // $2, $200k quote side
  await addLiquidity(w, MAN, WETH, e(30_000), e(20)); // $2, $60k
  await addLiquidity(w, MAN, USDX, e(10_000), e(20_000, 6)); // $2, $20k
  await addLiquidity(w, MAN, USDY, e(50), e(100, 6)); // $2, $100: below the minimum
  pools.deep = await w.pair(MAN, USDS);
  pools.weth = await w.pair(MAN, WETH);
  pools.usdx = await w.pair(MAN, USDX);
  pools.thin = await w.pair(MAN, USDY);
  config = {
    rpcUrl: anvil.url,
    chainId: 31_337,
    v2Factories: [w.factory],
    v3Factories: [],
    stableTokens: [USDS, USDX, USDY],
    quoteTokens: [WETH],
    nativeToken: undefined,
    confirmations: 0,
    startBlock: 0,
    batchBlocks: 50,
    pollMs: 3_600_000,
    metadataRefreshMs: 3_600_000,
    tokenList: undefined,
    tokenListRefreshMs: 3_600_000,
    secureMinMarketCapUsd: 1e12,
    minLiquidityUsd: 5_000,
    pricing: { outlierShare: 0.2, referenceLiquidityUsd: 100_000 },
  };
  t = await startTestApi({ indexer: config });
  await sync();
}, 180_000);
afterAll(async () => {
  await t?.close();
  await anvil?.stop();
});

const byPool = (list: Sources['sources']) => Object.fromEntries(list.map((s) => [s.pool, s]));

describe('price manipulation on the devnet DEX', () => {
  it('behavior: the price is the liquidity-weighted mean of the pools used, explained pool by pool', async () => {
    const s = await sources();
    baseline = (await token()).currentPrice!;
    expect(baseline).toBeCloseTo(2, 9);
    expect(s).toMatchObject({ contractAddress: MAN, price: baseline, basis: 'pools' });
    expect(s.sources.map((x) => x.pool)).toEqual([pools.deep, pools.weth, pools.usdx]); // deepest first
    const weth = byPool(s.sources)[pools.weth]!;
    expect(weth).toMatchObject({ kind: 'v2', quoteToken: w.tokens.WETH, route: [w.tokens.WETH, w.tokens.USDS] });
    expect(weth.quotePriceUsd).toBeCloseTo(3000, 6);
    expect(weth.liquidityUsd).toBeCloseTo(60_000, 3);
    expect(byPool(s.sources)[pools.deep]!.route).toEqual([w.tokens.USDS]);
    expect(s.sources.reduce((sum, x) => sum + x.weight * x.spotPrice, 0)).toBeCloseTo(baseline, 12);
    expect(s.excluded).toEqual([expect.objectContaining({ pool: pools.thin, reason: 'belowMinLiquidity', weight: 0 })]);
    expect(s.excludedCount).toBe(1);
    // confidence = depth × agreement × freshness, each recomputable from the answer.
    expect(s.parameters).toEqual({
      minLiquidityUsd: 5_000,
      outlierShare: 0.2,
      staleAfterSeconds: 604_800,
      referenceLiquidityUsd: 100_000,
    });
    expect(s.factors!.depth).toBe(1); // $280k used against a $100k reference
    expect(s.factors!.agreement).toBeCloseTo(1, 9);
    const age = (x: Sources['sources'][number]) => (Date.parse(s.evaluatedAt) - Date.parse(x.stateTime!)) / 1000;
    expect(s.factors!.freshness).toBeCloseTo(
      s.sources.reduce((sum, x) => sum + x.weight * 0.5 ** (age(x) / 604_800), 0),
      12,
    );
    expect(s.confidence).toBeCloseTo(s.factors!.depth * s.factors!.agreement * s.factors!.freshness, 12);
    for (const x of s.sources) {
      expect(x.blockNumber).toBeGreaterThan(0);
      expect(Date.parse(x.stateTime!) - at(11, 10).getTime()).toBeGreaterThanOrEqual(0); // the liquidity was added then
      expect(Date.parse(x.stateTime!) - at(11, 10).getTime()).toBeLessThan(HOUR);
    }
  });

  it('behavior: a pool below the minimum liquidity pushed 100× does not move currentPrice', async () => {
    await setNextTimestamp(w, at(9, 10));
    await swap(w, USDY, MAN, e(905, 6)); // 50 MAN / 100 USDY → about 5 MAN / 1,005 USDY: ×100
    await sync();
    expect((await token()).currentPrice).toBe(baseline);
    const thin = (await sources()).excluded.find((x) => x.pool === pools.thin)!;
    expect(thin.reason).toBe('belowMinLiquidity');
    expect(thin.spotPrice).toBeGreaterThan(100 * baseline * 0.95);
    expect(thin.liquidityUsd).toBeLessThan(5_000); // its quote side grew tenfold, still under the minimum
    expect(thin.stateTime).toBe(at(9, 10).toISOString());
  });

  it('behavior: a pool straying from the weighted median of the others is left out and listed as an outlier', async () => {
    await setNextTimestamp(w, at(8, 10));
    await swap(w, USDX, MAN, e(14_641, 6)); // ×3 in the $20k pool (now worth about $35k)
    await sync();
    const s = await sources();
    expect(s.sources.map((x) => x.pool)).toEqual([pools.deep, pools.weth]);
    const usdx = s.excluded.find((x) => x.pool === pools.usdx)!;
    expect(usdx.reason).toBe('outlier');
    expect(usdx.spotPrice).toBeGreaterThan(5.5);
    expect(usdx.medianOfOthers).toBeCloseTo(2, 6);
    expect(usdx.liquidityUsd).toBeGreaterThan(5_000);
    expect((await token()).currentPrice).toBeCloseTo(baseline, 9);
  });

  it('behavior: a real trade in the deep pool moves currentPrice', async () => {
    await setNextTimestamp(w, at(7, 10));
    await swap(w, w.tokens.USDS, MAN, e(10_000, 6));
    await sync();
    const price = (await token()).currentPrice!;
    const s = await sources();
    expect(price).toBeGreaterThan(baseline * 1.05);
    expect(s.price).toBe(price);
    expect(s.sources.map((x) => x.pool)).toEqual([pools.deep, pools.weth]); // 10 % apart: still agreeing
    expect(s.sources.reduce((sum, x) => sum + x.weight * x.spotPrice, 0)).toBeCloseTo(price, 12);
    expect(s.factors!.agreement).toBeLessThan(1);
  });
});

describe('hourly candles', () => {
  let spiked = 0;
  let before = 0;

  it('behavior: a one-block spike inside an hour shows in high, not in close, the /prices point or twap', async () => {
    before = (await token()).currentPrice!;
    await setNextTimestamp(w, at(5, 20));
    const held = await balance(MAN);
    await swap(w, w.tokens.USDS, MAN, e(200_000, 6)); // the deep pool's quote side doubled: about ×4
    const bought = (await balance(MAN)) - held;
    await setNextTimestamp(w, at(5, 20, 2));
    await swap(w, MAN, w.tokens.USDS, bought);
    await sync();
    const candles = await get<Candle[]>('getTokenCandles', `/prices/${MAN}/candles`);
    const hour = candles.find((c) => c.timestamp === at(5, 0).toISOString())!;
    spiked = hour.high;
    expect(hour.high).toBeGreaterThan(3 * before);
    expect(hour.close).toBeLessThan(1.01 * before);
    expect(Math.abs(hour.twap - hour.close) / hour.close).toBeLessThan(0.01);
    expect(hour.open).toBeCloseTo(before, 12);
    expect(hour.volumeUsd).toBeGreaterThan(200_000);
  });

  it("behavior: a spike in the last block of an hour is that hour's point and close, but not its twap", async () => {
    await setNextTimestamp(w, at(3, 0, -2));
    const held = await balance(MAN);
    await swap(w, w.tokens.USDS, MAN, e(200_000, 6));
    const bought = (await balance(MAN)) - held;
    await setNextTimestamp(w, at(3, 0, 2));
    await swap(w, MAN, w.tokens.USDS, bought);
    await sync();
    const candles = await get<Candle[]>('getTokenCandles', `/prices/${MAN}/candles`);
    const points = await get<Point[]>('getTokenPrices', `/prices/${MAN}`);
    const last = candles.find((c) => c.timestamp === at(4, 0).toISOString())!;
    expect(last.close).toBeGreaterThan(0.9 * spiked);
    expect(points.find((p) => p.timestamp === last.timestamp)!.price).toBe(last.close);
    expect(Math.abs(last.twap - last.open) / last.open).toBeLessThan(0.01);
    const next = candles.find((c) => c.timestamp === at(3, 0).toISOString())!;
    expect(next.open).toBe(last.close);
    expect(next.close).toBeLessThan(1.01 * before);
  });

  it('behavior: candles and /prices side by side: same hours, every close is the point, every open the previous close', async () => {
    const candles = await get<Candle[]>('getTokenCandles', `/prices/${MAN}/candles`);
    const points = await get<Point[]>('getTokenPrices', `/prices/${MAN}`);
    expect(candles.map((c) => c.timestamp)).toEqual(points.map((p) => p.timestamp));
    expect(candles.map((c) => c.close)).toEqual(points.map((p) => p.price));
    expect(candles.length).toBeGreaterThanOrEqual(12);
    candles.forEach((c, i) => {
      if (i > 0) expect(c.open).toBe(candles[i - 1]!.close);
      expect(c.high).toBeGreaterThanOrEqual(Math.max(c.open, c.close, c.twap) * (1 - 1e-12));
      expect(c.low).toBeLessThanOrEqual(Math.min(c.open, c.close, c.twap) * (1 + 1e-12));
    });
    // Hours without a swap of MAN are flat and carry no volume.
    const quiet = candles.find((c) => c.timestamp === at(6, 0).toISOString())!;
    expect(quiet).toMatchObject({
      open: quiet.close,
      high: quiet.close,
      low: quiet.close,
      twap: quiet.close,
      volumeUsd: 0,
    });
    // The deep-pool trade of 7 h ago: 10,000 USDS of MAN at the price after it.
    const trade = candles.find((c) => c.timestamp === at(7, 0).toISOString())!;
    expect(trade.volumeUsd).toBeGreaterThan(9_000);
    expect(trade.volumeUsd).toBeLessThan(11_500);
  });

  it('error: the same 400 and 404 as /prices/{contractAddress}', async () => {
    for (const [suffix, operationId] of [
      ['', 'getTokenPrices'],
      ['/candles', 'getTokenCandles'],
    ] as const) {
      expect(
        (await expectSpecResponse(operationId, await fetch(`${t.url}/prices/0x12${suffix}`))) as { status: number },
      ).toMatchObject({ status: 400 });
      expect(
        await expectSpecResponse(operationId, await fetch(`${t.url}/prices/${'0x'.padEnd(42, '9')}${suffix}`)),
      ).toMatchObject({ status: 404 });
    }
    expect(
      await expectSpecResponse('getTokenPriceSources', await fetch(`${t.url}/tokens/0x12/price-sources`)),
    ).toMatchObject({ status: 400 });
    expect(
      await expectSpecResponse(
        'getTokenPriceSources',
        await fetch(`${t.url}/tokens/${'0x'.padEnd(42, '9')}/price-sources`),
      ),
    ).toMatchObject({ status: 404 });
  });
});

describe('stale pools', () => {
  it('behavior: pools whose state is older than the stale limit are left out while a fresher pool remains', async () => {
    // A second API and indexer over the same chain, with a one-hour limit: MAN was last priced by the deep
    // pool's trade 3 h ago, when its WETH and USDX pools had not traded for 8 h and 5 h.
    const other = await startTestApi(
      { indexer: { ...config, pricing: { ...config.pricing, staleAfterSeconds: 3_600 } } },
      t.db,
      { schema: t.db.schema('token_api_stale') },
    );
    try {
      await other.api.indexer!.syncToHead();
      const s = (await expectSpecResponse(
        'getTokenPriceSources',
        await fetch(`${other.url}/tokens/${MAN}/price-sources`),
      )) as Sources;
      expect(s.sources.map((x) => x.pool)).toEqual([pools.deep]);
      expect(Object.fromEntries(s.excluded.map((x) => [x.pool, x.reason]))).toEqual({
        [pools.weth]: 'stale',
        [pools.usdx]: 'stale',
        [pools.thin]: 'belowMinLiquidity',
      });
      expect(s.price).toBeCloseTo(s.sources[0]!.spotPrice, 12);
      // Stablecoins are pegged, with full confidence and nothing to list.
      const usds = (await expectSpecResponse(
        'getTokenPriceSources',
        await fetch(`${other.url}/tokens/${w.tokens.USDS}/price-sources`),
      )) as Sources;
      expect(usds).toMatchObject({
        price: 1,
        basis: 'peg',
        confidence: 1,
        factors: null,
        sources: [],
        excluded: [],
        excludedCount: 0,
      });
    } finally {
      await other.close();
    }
  });
});
