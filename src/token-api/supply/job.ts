import { Contract, type JsonRpcProvider } from 'ethers';
import type { Common } from '../../common/kernel.js';
import { counter, gauge } from '../../common/metrics.js';
import { sleep } from '../../common/shutdown.js';
import type { ExcludedWalletConfig } from '../config.js';
import { formatDecimal } from '../decimal.js';
import { ERC20Interface } from '../../../generated/contracts/abi/index.js';

export interface SupplySnapshot {
  totalSupply: string;
  circulatingSupply: string;
  lastUpdated: Date;
  excludedWallets: (ExcludedWalletConfig & { balance: string })[];
  /** Raw integers, for tests and logs. */
  raw: { totalSupply: bigint; circulatingSupply: bigint; blockNumber: number; decimals: number };
}

/** The latest computed supply; undefined until the first computation (the endpoints answer 503 then). */
export class SupplyCache {
  snapshot: SupplySnapshot | undefined;
  constructor(
    /** Seconds a client should wait before retrying while the cache is empty. */
    readonly retryAfterSeconds: number,
    /** Cache-Control max-age of supply responses: never longer than the refresh interval. */
    readonly maxAgeSeconds: number,
  ) {}
}

/**
 * Reads totalSupply() of the native token and balanceOf() of every excluded wallet at one block, so the
 * subtraction is consistent, and formats both with the token's decimals (18 for the native token).
 */
export async function computeSupply(
  provider: JsonRpcProvider,
  token: string,
  wallets: readonly ExcludedWalletConfig[],
  decimals?: number,
): Promise<SupplySnapshot> {
  const contract = new Contract(token, ERC20Interface, provider);
  const blockTag = await provider.getBlockNumber();
  const dec = decimals ?? Number(await contract.getFunction('decimals').staticCall({ blockTag }));
  const [total, ...balances] = (await Promise.all([
    contract.getFunction('totalSupply').staticCall({ blockTag }),
    ...wallets.map((w) => contract.getFunction('balanceOf').staticCall(w.address, { blockTag })),
  ])) as bigint[];
  const excluded = balances.reduce((a, b) => a + b, 0n);
  const circulating = total! > excluded ? total! - excluded : 0n;
  return {
    totalSupply: formatDecimal(total!, dec),
    circulatingSupply: formatDecimal(circulating, dec),
    lastUpdated: new Date(),
    excludedWallets: wallets.map((w, i) => ({ ...w, balance: formatDecimal(balances[i]!, dec) })),
    raw: { totalSupply: total!, circulatingSupply: circulating, blockNumber: blockTag, decimals: dec },
  };
}

/**
 * Refreshes the supply cache every `intervalMs` until shutdown. Failures keep the previous figures (their
 * `lastUpdated` tells clients how old they are) and are retried sooner.
 */
export function startSupplyJob(options: {
  common: Common;
  provider: JsonRpcProvider;
  token: string;
  wallets: readonly ExcludedWalletConfig[];
  intervalMs: number;
  cache: SupplyCache;
}): { stop(): Promise<void>; refresh(): Promise<void> } {
  const { common, provider, token, wallets, intervalMs, cache } = options;
  const logger = common.logger.child({ module: 'token-supply' });
  const runs = counter(common.metrics, 'l2stack_token_supply_refresh_total', 'Supply refreshes by outcome', [
    'outcome',
  ]);
  const age = gauge(
    common.metrics,
    'l2stack_token_supply_last_success_seconds',
    'Unix time of the last successful supply refresh',
  );
  const controller = new AbortController();
  const signal = AbortSignal.any([controller.signal, common.shutdown.signal]);
  let decimals: number | undefined;

  const refresh = async () => {
    try {
      const snapshot = await computeSupply(provider, token, wallets, decimals);
      decimals = snapshot.raw.decimals; // immutable on an ERC-20: read once
      cache.snapshot = snapshot;
      runs.inc({ outcome: 'ok' });
      age.set(snapshot.lastUpdated.getTime() / 1000);
      logger.debug(
        {
          totalSupply: snapshot.totalSupply,
          circulatingSupply: snapshot.circulatingSupply,
          block: snapshot.raw.blockNumber,
        },
        'supply refreshed',
      );
    } catch (err) {
      runs.inc({ outcome: 'error' });
      logger.warn({ err }, 'supply refresh failed; keeping the previous figures');
      throw err;
    }
  };

  const aborted = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  const loop = (async () => {
    while (!signal.aborted) {
      let ok = true;
      // An RPC call that hangs (node down, ethers retrying) must not hold up shutdown.
      await Promise.race([refresh().catch(() => (ok = false)), aborted]);
      if (!(await sleep(ok ? intervalMs : Math.min(intervalMs, 5_000), signal))) break;
    }
  })();

  return {
    refresh,
    stop: async () => {
      controller.abort();
      await loop;
      provider.destroy();
    },
  };
}
