import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseUnits } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../../generated/token-api/client.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import type { TokenIndexerConfig } from '../../src/token-api/config.js';
import { startTokenIndexer } from '../../src/token-api/index.js';
import {
  addLiquidity,
  buildWorld,
  setNextTimestamp,
  sqrtPriceX96For,
  swap,
  v2Price,
  v3PoolCreated,
  v3Swap,
  type World,
} from './chain.js';
import { startTestApi, testCommon, type TestApi } from './helpers.js';

/**
 * The indexer against a real anvil: pools discovered from V2 and V3 factory events, metadata of awkward
 * tokens, swaps counted once, USD prices through routes and liquidity weights, hourly rows over a day of
 * chain time (evm_setNextBlockTimestamp), the 24 h variation, the token list, restart and re-run safety.
 */
type Token = components['schemas']['Token'];
const HOUR = 3_600_000;
const NOW = Date.now();
const ago = (h: number) => new Date(NOW - h * HOUR);
const lastHourStart = new Date(Math.floor((NOW - 2 * HOUR) / HOUR) * HOUR);
const late1 = new Date(lastHourStart.getTime() + 5 * 60_000);
const late2 = new Date(lastHourStart.getTime() + 50 * 60_000);

let anvil: Anvil;
let w: World;
let t: TestApi;
let indexerConfig: TokenIndexerConfig;
const e = (n: number | string, d = 18) => parseUnits(String(n), d);
let p25 = 0;
let pNow = 0;

beforeAll(async () => {
  anvil = await startAnvil({ port: 0, chainId: 31_337, timestamp: Math.floor(ago(27).getTime() / 1000) });
  w = await buildWorld(createProvider(anvil.url, 31_337));
  const { USDS, WETH, TST, SIX, SPAM, MKR, BROKE, VTK } = w.tokens;
  await setNextTimestamp(w, ago(26.5));
  await addLiquidity(w, WETH, USDS, e(100), e(300_000, 6));
  await addLiquidity(w, TST, WETH, e(30_000), e(30));
  await addLiquidity(w, SIX, USDS, e(1_000, 6), e(1_500, 6));
  await addLiquidity(w, SIX, WETH, e(2_000, 6), e(2));
  await addLiquidity(w, MKR, WETH, e(100), e(50));
  await addLiquidity(w, BROKE, USDS, e(1_000), e(200, 6));
  await addLiquidity(w, SPAM, WETH, e(1_000_000_000), e(1));
  const [v0, v1] = VTK < USDS ? [VTK, USDS] : [USDS, VTK];
  await v3PoolCreated(w, v0, v1, 3000);

  await setNextTimestamp(w, ago(25));
  await swap(w, WETH, TST, e(1));
  p25 = (await v2Price(w, TST, WETH, 18, 18)) * 3000;
  await setNextTimestamp(w, ago(20));
  await swap(w, TST, WETH, e(500));
  await setNextTimestamp(w, ago(10));
  await swap(w, WETH, TST, e(0.5));
  await setNextTimestamp(w, ago(3));
  const vtkIs0 = v0 === VTK;
  await v3Swap(
    w,
    vtkIs0 ? e(10) : -e(20, 6),
    vtkIs0 ? -e(20, 6) : e(10),
    sqrtPriceX96For(vtkIs0 ? 2 : 0.5, vtkIs0 ? 18 : 6, vtkIs0 ? 6 : 18),
    10n ** 18n,
  );
  await setNextTimestamp(w, late1);
  await swap(w, WETH, TST, e(0.25));
  await setNextTimestamp(w, late2);
  await swap(w, TST, WETH, e(100));
  pNow = (await v2Price(w, TST, WETH, 18, 18)) * 3000;

  const listFile = join(mkdtempSync(join(tmpdir(), 'token-list-')), 'list.json');
  writeFileSync(
    listFile,
    JSON.stringify({
      name: 'test list',
      tokens: [
        {
          chainId: 31_337,
          address: TST,
          symbol: 'TST',
          name: 'Test Coin',
          decimals: 18,
          logoURI: 'https://example.org/tst.png',
        },
        {
          chainId: 31_337,
          address: USDS,
          symbol: 'USDS',
          name: 'USD Stable',
          decimals: 6,
          logoURI: 'https://example.org/usds.png',
        },
        { chainId: 31_337, address: SIX, symbol: 'SIX', name: 'Six Decimals', decimals: 6 },
        {
          chainId: 1,
          address: MKR,
          symbol: 'MKR',
          name: 'Maker on another chain',
          decimals: 18,
          logoURI: 'https://example.org/mkr.png',
        },
      ],
    }),
  );
  indexerConfig = {
    rpcUrl: anvil.url,
    chainId: 31_337,
    v2Factories: [w.factory],
    v3Factories: [w.v3Factory],
    stableTokens: [USDS],
    quoteTokens: [WETH],
    nativeToken: undefined,
    confirmations: 0,
    startBlock: 0,
    batchBlocks: 7,
    pollMs: 3_600_000,
    metadataRefreshMs: 3_600_000,
    tokenList: listFile,
    tokenListRefreshMs: 3_600_000,
    secureMinMarketCapUsd: 10_000_000,
    minLiquidityUsd: 0,
    // SIX's two pools disagree by 100 %: wide enough here that both price it (outliers: manipulation.test.ts).
    pricing: { outlierShare: 1 },
  };
  t = await startTestApi({ indexer: indexerConfig });
  await t.api.indexer!.syncToHead();
});
afterAll(async () => {
  await t?.close();
  await anvil?.stop();
});

const token = async (address: string) => (await (await fetch(`${t.url}/tokens/${address}`)).json()) as Token;

describe('token indexer', () => {
  it('behavior: discovers every pool token and reads awkward metadata', async () => {
    const { data } = await t.client.GET('/tokens', { params: { query: { order: 'symbol', sort: 'asc', limit: 100 } } });
    const bySymbol = Object.fromEntries(data!.data.map((x) => [x.symbol, x]));
    expect(Object.keys(bySymbol).sort()).toEqual(['AIRDROP', 'BROKE', 'MKR', 'SIX', 'TST', 'USDS', 'VTK', 'WETH']);
    expect(bySymbol.MKR).toMatchObject({ name: 'Maker', decimals: 18, isPossibleSpam: false });
    // name() reverts: falls back to the symbol
    expect(bySymbol.BROKE).toMatchObject({ name: 'BROKE', isPossibleSpam: true });
    expect(bySymbol.AIRDROP!.isPossibleSpam).toBe(true);
    expect(bySymbol.SIX).toMatchObject({ decimals: 6, info: { totalSupply: '1000000' } });
    expect(bySymbol.TST!.info.totalSupply).toBe('100000000');
  });

  it('behavior: counts buys, sells and swaps per token', async () => {
    expect((await token(w.tokens.TST)).info).toMatchObject({ buys: 3, sells: 2, swaps: 5 });
    expect((await token(w.tokens.WETH)).info).toMatchObject({ buys: 2, sells: 3, swaps: 5 });
    expect((await token(w.tokens.VTK)).info).toMatchObject({ swaps: 1, sells: 1, buys: 0 });
    expect((await token(w.tokens.SIX)).info).toMatchObject({ swaps: 0 });
  });

  it('behavior: prices stablecoins at 1, quotes through their pools, other tokens through routes', async () => {
    expect((await token(w.tokens.USDS)).currentPrice).toBe(1);
    expect((await token(w.tokens.WETH)).currentPrice).toBeCloseTo(3000, 6);
    const tst = await token(w.tokens.TST);
    expect(tst.currentPrice).toBeCloseTo(pNow, 9);
    expect(tst.priceUpdatedAt).toBe(late2.toISOString().replace(/\.\d+Z$/, '.000Z'));
    expect(tst.info.fdv).toBeCloseTo(pNow * 100_000_000, 0);
    expect((await token(w.tokens.MKR)).currentPrice).toBeCloseTo(1500, 6);
    expect((await token(w.tokens.BROKE)).currentPrice).toBeCloseTo(0.2, 9);
  });

  it('behavior: several pools are combined weighted by their quote-side liquidity', async () => {
    // SIX: 1.5 USD in a pool with $1,500 of USDS, 3 USD in a pool with $6,000 of WETH.
    expect((await token(w.tokens.SIX)).currentPrice).toBeCloseTo((1.5 * 1_500 + 3 * 6_000) / 7_500, 9);
  });

  it('behavior: V3 pools are priced from sqrtPriceX96', async () => {
    expect((await token(w.tokens.VTK)).currentPrice).toBeCloseTo(2, 6);
  });

  it('behavior: hourly prices keep the last observation per UTC hour, one point per hour of the last 24 h', async () => {
    const { data } = await t.client.GET('/prices/{contractAddress}', {
      params: { path: { contractAddress: w.tokens.TST } },
    });
    const hours = data!.map((p) => Date.parse(p.timestamp));
    expect([24, 25]).toContain(hours.length);
    hours.forEach((h, i) => expect(h).toBe(hours[0]! + i * HOUR));
    const point = (d: Date) => data!.find((p) => Date.parse(p.timestamp) === Math.floor(d.getTime() / HOUR) * HOUR)!;
    // late1 and late2 fall in one hour: its point is the later swap's price, carried to every later hour.
    expect(point(late2).price).toBeCloseTo(pNow, 9);
    expect(data!.at(-1)!.price).toBeCloseTo(pNow, 9);
    // The hours between the swaps 20 h and 10 h ago have points, all at the price the 20 h swap left.
    expect(new Set([15, 14, 13, 12].map((h) => point(ago(h)).price)).size).toBe(1);
  });

  it('behavior: last24hVariation runs from the first to the last point of the hourly series', async () => {
    const tst = await token(w.tokens.TST);
    // TST traded 25 h ago, so its series opens at that price.
    expect(tst.last24hVariation).toBeCloseTo(((pNow - p25) / p25) * 100, 6);
    // VTK's only price is 3 h old: its series opens and closes at that price.
    expect((await token(w.tokens.VTK)).last24hVariation).toBe(0);
  });

  it('behavior: the token list gives logos and, with the market-cap threshold, the secure flag', async () => {
    expect((await token(w.tokens.TST)).logo).toBe('https://example.org/tst.png');
    expect((await token(w.tokens.MKR)).logo).toBe(`${t.url}/logos/${w.tokens.MKR}.svg`); // listed on another chain only
    const secure = await t.client.GET('/tokens', {
      params: { query: { isSecure: true, order: 'symbol', sort: 'asc' } },
    });
    expect(secure.data!.data.map((x) => x.symbol)).toEqual(['TST', 'USDS']); // SIX is listed but below $10M
  });

  it('behavior: progress is in metrics and logs', async () => {
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    const head = await w.provider.getBlockNumber();
    expect(metrics).toContain(`l2stack_token_indexer_indexed_block ${head}`);
    expect(metrics).toContain('l2stack_token_indexer_backfill_progress 1');
  });

  it('behavior: a new indexer resumes from the cursor, and re-indexing the same blocks changes nothing', async () => {
    await t.api.indexer!.stop();
    const before = await token(w.tokens.TST);
    const pricesBefore = await (await fetch(`${t.url}/prices/${w.tokens.TST}`)).json();
    // Re-run every block: the unique (tx hash, log index) keeps counts and hourly rows as they were.
    await t.db.client.knex(`${t.schema}.cursors`).update({ block: -1 });
    const common = testCommon();
    const again = await startTokenIndexer({ common, db: t.db.client, config: indexerConfig, schema: t.schema });
    try {
      await again.syncToHead();
      await t.api.sync();
      expect((await token(w.tokens.TST)).info).toEqual(before.info);
      expect(await (await fetch(`${t.url}/prices/${w.tokens.TST}`)).json()).toEqual(pricesBefore);
      // And it keeps following the chain.
      await swap(w, w.tokens.WETH, w.tokens.TST, e(0.1));
      await again.syncToHead();
      await t.api.sync();
      expect((await token(w.tokens.TST)).info).toMatchObject({ buys: 4, sells: 2, swaps: 6 });
    } finally {
      await again.stop();
    }
  });

  it('behavior: blocks younger than the confirmations are not indexed yet', async () => {
    const common = testCommon();
    const schema = t.db.schema('token_api_conf');
    const head = await w.provider.getBlockNumber();
    const idx = await startTokenIndexer({
      common,
      db: t.db.client,
      config: { ...indexerConfig, confirmations: 3, batchBlocks: 1_000 },
      schema,
    });
    try {
      expect(await idx.syncToHead()).toBe(head - 3);
    } finally {
      await idx.stop();
    }
  });
});
