import { AbiCoder, encodeBytes32String } from 'ethers';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/common/config/env.js';
import { loadTokenApiConfig, loadTokenIndexerConfig } from '../../src/token-api/config.js';
import { formatDecimal } from '../../src/token-api/decimal.js';
import { decodeText } from '../../src/token-api/indexer/metadata.js';
import { PriceOracle, poolSpot, type PoolState } from '../../src/token-api/indexer/pricing.js';
import { DEFAULT_PRICING } from '../../src/token-api/indexer/sources.js';
import { spamReasons } from '../../src/token-api/indexer/spam.js';
import { parseTokenList } from '../../src/token-api/indexer/token-list.js';
import { runL2stack } from '../helpers/l2stack.js';

describe('token API building blocks', () => {
  it('behavior: formatDecimal is exact and drops trailing zeros', () => {
    expect(formatDecimal(10n ** 27n + 1n, 18)).toBe('1000000000.000000000000000001');
    expect(formatDecimal(1_500_000n, 6)).toBe('1.5');
    expect(formatDecimal(0n, 18)).toBe('0');
    expect(formatDecimal(12n, 0)).toBe('12');
    expect(formatDecimal(2n ** 256n - 1n, 18)).toBe(
      '115792089237316195423570985008687907853269984665640564039457.584007913129639935',
    );
  });

  it('behavior: metadata decodes ABI strings and bytes32, and strips control characters', () => {
    expect(decodeText(AbiCoder.defaultAbiCoder().encode(['string'], ['Wrapped\u0000 Ether\u202e']))).toBe(
      'Wrapped Ether',
    );
    expect(decodeText(encodeBytes32String('MKR'))).toBe('MKR');
    expect(decodeText('0x1234')).toBeUndefined();
  });

  it('behavior: the spam heuristic flags links, lures, impersonation and unreadable metadata, never listed tokens', () => {
    const base = { metadataComplete: true, listed: false, listedSymbols: new Set(['usdc']) };
    expect(spamReasons({ ...base, name: 'Wrapped Ether', symbol: 'WETH' })).toEqual([]);
    expect(spamReasons({ ...base, name: 'Visit usdc-claim.xyz', symbol: 'X' })).toEqual([
      'link in name or symbol',
      'call to action in name or symbol',
    ]);
    expect(spamReasons({ ...base, name: 'USD Coin', symbol: 'USDC' })).toEqual(['symbol of a listed token']);
    expect(spamReasons({ ...base, name: 'x', symbol: 'X', metadataComplete: false })).toEqual(['metadata unreadable']);
    expect(spamReasons({ ...base, name: 'FREE claim at x.xyz', symbol: 'X', listed: true })).toEqual([]);
  });

  it('behavior: pricing routes through quote tokens and never prices two unknown tokens from each other', () => {
    const pools = new Map<string, PoolState>([
      [
        'p1',
        {
          address: 'p1',
          kind: 'v2',
          token0: 'weth',
          token1: 'usd',
          reserve0: 10n ** 18n,
          reserve1: 3_000n * 10n ** 6n,
        },
      ],
      [
        'p2',
        {
          address: 'p2',
          kind: 'v2',
          token0: 'abc',
          token1: 'weth',
          reserve0: 1_000n * 10n ** 18n,
          reserve1: 10n ** 18n,
        },
      ],
      ['p3', { address: 'p3', kind: 'v2', token0: 'abc', token1: 'xyz', reserve0: 10n ** 18n, reserve1: 10n ** 18n }],
    ]);
    const byToken = new Map<string, Set<string>>();
    for (const p of pools.values())
      for (const t of [p.token0, p.token1]) byToken.set(t, (byToken.get(t) ?? new Set()).add(p.address));
    const decimals: Record<string, number> = { weth: 18, usd: 6, abc: 18, xyz: 18 };
    const input = { pools, poolsByToken: byToken, decimals: (t: string) => decimals[t] };
    const settings = (minLiquidityUsd: number) => ({ minLiquidityUsd, ...DEFAULT_PRICING });
    const oracle = new PriceOracle(new Set(['usd']), new Set(['weth']), settings(0));
    const quotes = oracle.quotePrices(input, 0);
    expect(quotes.get('weth')!.price).toBeCloseTo(3000, 9);
    const abc = oracle.explain('abc', input, quotes, 0)!;
    expect(abc.price).toBeCloseTo(3, 9);
    expect(abc.used.map((u) => [u.pool, u.quote, u.route])).toEqual([['p2', 'weth', ['weth', 'usd']]]);
    expect(oracle.explain('xyz', input, quotes, 0)).toBeUndefined();
    expect(oracle.explain('usd', input, quotes, 0)).toMatchObject({ price: 1, basis: 'peg' });
    expect(
      new PriceOracle(new Set(['usd']), new Set(['weth']), settings(10_000)).explain('abc', input, quotes, 0),
    ).toBeUndefined(); // $3,000 side < minimum
  });

  it('behavior: V3 spot price and virtual reserves from sqrtPriceX96', () => {
    // 2 USD per 18-decimal token against a 6-decimal stable
    const sqrt = BigInt(Math.round(Math.sqrt(2e-12) * 2 ** 96));
    const spot = poolSpot(
      { address: 'p', kind: 'v3', token0: 'a', token1: 'b', sqrtPriceX96: sqrt, liquidity: 10n ** 18n },
      18,
      6,
    )!;
    expect(spot.price0In1).toBeCloseTo(2, 9);
    expect(spot.amount1 / spot.amount0).toBeCloseTo(2, 6);
  });

  it('behavior: token lists keep only well-formed entries of the chain', () => {
    const list = parseTokenList(
      {
        tokens: [
          { chainId: 5, address: '0x' + 'A'.repeat(40), symbol: 'A', name: 'A', logoURI: 'https://x/a.png' },
          { chainId: 5, address: 'nope', symbol: 'B' },
          { chainId: 6, address: '0x' + 'c'.repeat(40), symbol: 'C' },
          { chainId: 5, address: '0x' + 'd'.repeat(40), symbol: 'D', logoURI: 'not a uri' },
        ],
      },
      5,
    );
    expect([...list.keys()]).toEqual(['0x' + 'a'.repeat(40), '0x' + 'd'.repeat(40)]);
    expect(list.get('0x' + 'd'.repeat(40))!.logoURI).toBeUndefined();
    expect(() => parseTokenList({}, 5)).toThrow('no "tokens" array');
  });
});

describe('token API config', () => {
  it('behavior: defaults and JSON excluded wallets', () => {
    const { config } = loadTokenApiConfig({
      TOKEN_INDEXER_RPC_URL: 'http://127.0.0.1:8545',
      NATIVE_TOKEN_ADDRESS: '0x' + 'AB'.repeat(20),
      TOKEN_SUPPLY_EXCLUDED_WALLETS: JSON.stringify([
        { address: '0x' + 'CD'.repeat(20), label: 'Treasury', status: 'active' },
      ]),
      TOKEN_INDEXER_V2_FACTORIES: '0x' + '11'.repeat(20) + ', 0x' + '22'.repeat(20),
    });
    expect(config).toMatchObject({ host: '127.0.0.1', port: 3000, nativeToken: '0x' + 'ab'.repeat(20) });
    expect(config.excludedWallets).toEqual([{ address: '0x' + 'cd'.repeat(20), label: 'Treasury', status: 'active' }]);
    expect(config.indexer).toMatchObject({
      confirmations: 5,
      startBlock: 0,
      v2Factories: ['0x' + '11'.repeat(20), '0x' + '22'.repeat(20)],
      secureMinMarketCapUsd: 50_000,
    });
    expect(loadTokenApiConfig({}, { indexer: false }).config.indexer).toBeUndefined();
  });

  it('error: every bad variable is reported at once, by name', () => {
    try {
      loadTokenIndexerConfig({
        TOKEN_API_PORT: 'x',
        TOKEN_INDEXER_V3_FACTORIES: '0x12',
        TOKEN_SUPPLY_EXCLUDED_WALLETS: '[{"address":"0x1"}]',
      });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const text = (err as Error).message;
      for (const name of ['TOKEN_API_PORT', 'TOKEN_INDEXER_V3_FACTORIES', 'TOKEN_SUPPLY_EXCLUDED_WALLETS'])
        expect(text).toContain(name);
    }
    // TOKEN_INDEXER_RPC_URL is checked once the variables parse.
    expect(() => loadTokenIndexerConfig({})).toThrow('TOKEN_INDEXER_RPC_URL: required');
  });

  it('error: l2stack token-api exits 1 with every config problem before touching chain or database', () => {
    const r = runL2stack(['token-api'], {
      timeout: 30_000,
      env: { PATH: process.env.PATH, TOKEN_API_PORT: '70000', DATABASE_PORT: 'x' },
    });
    expect(r.status).toBe(1);
    for (const name of ['TOKEN_API_PORT', 'DATABASE_PORT']) expect(r.stderr).toContain(name);
  });
});
