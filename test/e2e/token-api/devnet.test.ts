import { parseUnits, Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { components } from '../../../generated/token-api/client.js';
import {
  DexRouter__factory,
  NativeToken__factory,
  TestToken__factory,
} from '../../../generated/contracts/types/index.js';
import { createProvider } from '../../../src/common/chain/provider.js';
import { expectSpecResponse, startTestApi, type TestApi } from '../../token-api/helpers.js';
import { mined } from '../../../src/common/chain/mined.js';

/**
 * The token API with its indexer and supply job on the shared devnet (a day of generated trading, a burn,
 * transfers to the excluded wallets): a swap moves counts and price, a burn lowers the total supply, a
 * transfer to an excluded wallet lowers the circulating supply. Sender: test account 12 (token-api's),
 * funded once from the treasury, which is an excluded wallet no process sends from.
 */
type Token = components['schemas']['Token'];
const state = inject('devnet');
const provider = createProvider(state.l2.upstreamRpcUrl, state.l2.chainId);
const me = new Wallet(state.accounts[12]!.privateKey, provider);
const treasury = state.excludedWallets.find((w) => w.label === 'Treasury')!;
const treasuryKey = state.accounts.find((a) => a.address.toLowerCase() === treasury.address.toLowerCase())!.privateKey;
const native = state.nativeToken.toLowerCase();
const usds = state.stablecoin.toLowerCase();
const weth = state.tokens.find((x) => x.symbol === 'WETH')!.address.toLowerCase();
let t: TestApi;

const get = (path: string) => fetch(`${t.url}${path}`);
const token = async (address: string) => (await (await get(`/tokens/${address}`)).json()) as Token;
const supply = async (kind: 'total' | 'circulating') =>
  parseUnits(await (await get(`/tokens/${native}/supply/${kind}`)).text(), 18);
const refresh = async () => {
  await t.api.indexer!.syncToHead();
  await t.api.supply!.refresh();
};

beforeAll(async () => {
  t = await startTestApi({
    nativeToken: native,
    rpcUrl: state.l2.rpcUrl,
    excludedWallets: state.excludedWallets,
    indexer: {
      rpcUrl: state.l2.rpcUrl,
      chainId: state.l2.chainId,
      v2Factories: [state.dex.factory],
      v3Factories: [],
      stableTokens: [usds],
      quoteTokens: [weth],
      nativeToken: native,
      confirmations: 0,
      startBlock: 0,
      batchBlocks: 500,
      pollMs: 3_600_000,
      metadataRefreshMs: 3_600_000,
      tokenList: undefined,
      tokenListRefreshMs: 3_600_000,
      secureMinMarketCapUsd: 50_000,
      minLiquidityUsd: 0,
    },
  });
  const nat = NativeToken__factory.connect(native, new Wallet(treasuryKey, provider));
  await mined(nat.transfer(me.address, parseUnits('100000', 18)));
  await mined(TestToken__factory.connect(native, me).approve(state.dex.router, 2n ** 256n - 1n));
  await refresh();
});
afterAll(async () => {
  await t?.close();
  provider.destroy();
});

describe('token API on the devnet', () => {
  it('behavior: the generated day of trading gives every devnet token a price, hourly points and a variation', async () => {
    const { data } = await t.client.GET('/tokens', { params: { query: { limit: 100 } } });
    expect(data!.meta.totalItemsCount).toBe(state.tokens.length);
    const l2s = await token(native);
    expect(l2s.currentPrice).toBeGreaterThan(0);
    expect(l2s.info.swaps).toBeGreaterThan(0);
    expect(l2s.last24hVariation).not.toBeNull();
    const prices = (await expectSpecResponse('getTokenPrices', await get(`/prices/${native}`))) as {
      timestamp: string;
    }[];
    // L2S trades in most hours of the generated day (the history rotates over the pools).
    expect(prices.length).toBeGreaterThanOrEqual(8);
    expect(prices.length).toBeLessThanOrEqual(25);
    const hours = prices.map((p) => Math.floor(Date.parse(p.timestamp) / 3_600_000));
    expect(new Set(hours).size).toBe(hours.length);
    expect([...hours].sort((a, b) => a - b)).toEqual(hours);
  });

  it("behavior: the native token's price is explained by its pool, and its candles sit beside its hourly points", async () => {
    const sources = (await expectSpecResponse(
      'getTokenPriceSources',
      await get(`/tokens/${native}/price-sources`),
    )) as {
      price: number;
      basis: string;
      confidence: number;
      sources: { pool: string; weight: number; spotPrice: number; route: string[] }[];
    };
    const l2s = await token(native);
    expect(sources).toMatchObject({ price: l2s.currentPrice, basis: 'pools' });
    expect(sources.sources.length).toBeGreaterThanOrEqual(1);
    expect(sources.sources.reduce((s, x) => s + x.weight * x.spotPrice, 0)).toBeCloseTo(l2s.currentPrice!, 9);
    expect(sources.sources.every((x) => [usds, weth].includes(x.route[0]!))).toBe(true);
    expect(sources.confidence).toBeGreaterThan(0);
    const candles = (await expectSpecResponse('getTokenCandles', await get(`/prices/${native}/candles`))) as {
      timestamp: string;
      close: number;
      volumeUsd: number;
    }[];
    const points = (await expectSpecResponse('getTokenPrices', await get(`/prices/${native}`))) as {
      timestamp: string;
      price: number;
    }[];
    expect(candles.map((c) => [c.timestamp, c.close])).toEqual(points.map((p) => [p.timestamp, p.price]));
    expect(candles.some((c) => c.volumeUsd > 0)).toBe(true);
  });

  it('behavior: a swap changes buys, sells, swaps and the price', async () => {
    const before = await token(native);
    const usdsBefore = await token(usds);
    const router = DexRouter__factory.connect(state.dex.router, me);
    await mined(router.swapExactTokensForTokens(parseUnits('50000', 18), 0n, native, usds, me.address));
    await refresh();
    const after = await token(native);
    expect(after.info).toMatchObject({
      swaps: before.info.swaps + 1,
      sells: before.info.sells + 1,
      buys: before.info.buys,
    });
    expect(after.currentPrice!).toBeLessThan(before.currentPrice!); // selling pushes the price down
    expect((await token(usds)).info.buys).toBe(usdsBefore.info.buys + 1);
  });

  it('behavior: a burn lowers the total supply by exactly the burned amount', async () => {
    const total = await supply('total');
    const circulating = await supply('circulating');
    await mined(NativeToken__factory.connect(native, me).burn(parseUnits('1234.000000000000000001', 18)));
    await refresh();
    expect(await supply('total')).toBe(total - parseUnits('1234.000000000000000001', 18));
    expect(await supply('circulating')).toBe(circulating - parseUnits('1234.000000000000000001', 18));
  });

  it('behavior: a transfer to an excluded wallet lowers the circulating supply, not the total', async () => {
    const total = await supply('total');
    const circulating = await supply('circulating');
    const wallet = state.excludedWallets.find((w) => w.label !== 'Treasury')!;
    await mined(NativeToken__factory.connect(native, me).transfer(wallet.address, parseUnits('500', 18)));
    await refresh();
    expect(await supply('total')).toBe(total);
    expect(await supply('circulating')).toBe(circulating - parseUnits('500', 18));
    const json = (await expectSpecResponse(
      'getCirculatingSupply',
      await get(`/tokens/${native}/supply/circulating?format=json`),
    )) as { excludedWallets: { address: string }[] };
    expect(json.excludedWallets.map((w) => w.address)).toEqual(
      state.excludedWallets.map((w) => w.address.toLowerCase()),
    );
  });
});
