import { JsonRpcProvider, Network } from 'ethers';
import { pooledFetchRequest } from './pool.js';

/**
 * An ethers provider for a node whose chain id is known: no network auto-detection round trips and no
 * response caching (anvil and our own endpoint answer fast, and cached block numbers cause stale reads).
 * Its connections come from the process's bounded pool (./pool.ts).
 */
export function createProvider(url: string, chainId?: number, options: { pollingInterval?: number } = {}): JsonRpcProvider {
  const network = chainId !== undefined ? Network.from(chainId) : undefined;
  const provider = new JsonRpcProvider(pooledFetchRequest(url), network, { staticNetwork: network ?? true, cacheTimeout: -1, batchMaxCount: 1 });
  provider.pollingInterval = options.pollingInterval ?? 250;
  return provider;
}
