import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { StackService } from './service.js';
import { loadTokenApiConfig, startTokenApi, type TokenApiConfig } from '../../token-api/index.js';

/**
 * The token API under `l2stack dev`: indexer and supply job pointed at the devnet L2, its DEX factory, the
 * stablecoin and WETH as quote tokens, and the devnet's excluded wallets. A token list for the devnet
 * (the well-known tokens, not the awkward ones) gives the "secure" flag something real to work from.
 */
export const tokenApiService: StackService = {
  name: 'tokenApi',
  port(env) {
    const { config } = loadTokenApiConfig(env, { indexer: false });
    return { host: config.host, port: config.port };
  },
  async start({ common, db, devnet, env, host, port, workDir }) {
    const { config: base } = loadTokenApiConfig(env, { indexer: false });
    const s = devnet.state;
    const weth = s.tokens.find((t) => t.symbol === 'WETH')!.address;
    const listed = s.tokens.filter((t) => ['L2S', 'USDS', 'WETH', 'TST', 'SIX'].includes(t.symbol));
    const tokenList = join(workDir, 'tokenlist.json');
    await mkdir(workDir, { recursive: true });
    await writeFile(
      tokenList,
      JSON.stringify({
        name: 'l2stack devnet',
        timestamp: new Date().toISOString(),
        version: { major: 1, minor: 0, patch: 0 },
        tokens: listed.map((t) => ({ chainId: s.l2.chainId, ...t })),
      }),
    );
    const config: TokenApiConfig = {
      ...base,
      host,
      port,
      nativeToken: s.nativeToken,
      excludedWallets: s.excludedWallets,
      supplyRefreshMs: 5_000,
      rpcUrl: s.l2.upstreamRpcUrl,
      indexer: {
        rpcUrl: s.l2.upstreamRpcUrl,
        chainId: s.l2.chainId,
        v2Factories: [s.dex.factory],
        v3Factories: [],
        stableTokens: [s.stablecoin],
        quoteTokens: [weth],
        nativeToken: s.nativeToken,
        confirmations: 0,
        startBlock: 0,
        batchBlocks: 2_000,
        pollMs: 1_000,
        metadataRefreshMs: 3_600_000,
        tokenList,
        tokenListRefreshMs: 3_600_000,
        secureMinMarketCapUsd: 50_000,
        minLiquidityUsd: 0,
      },
    };
    const api = await startTokenApi({ common, db, config });
    return api.url;
  },
};
