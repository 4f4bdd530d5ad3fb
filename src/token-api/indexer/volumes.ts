import type { Log } from 'ethers';
import { toFloat } from '../decimal.js';
import { TOPICS, v2PairAbi, v3PoolAbi } from './abi.js';
import type { PoolState } from './pricing.js';

/** The amount of one token a swap moved, in whole tokens; valued in USD once its block is priced. */
export interface SwapVolume {
  txHash: string;
  logIndex: number;
  block: number;
  at: Date;
  token: string;
  amount: number;
}

const abs = (v: bigint) => (v < 0n ? -v : v);

/** What a Swap log moved into the pool, per side (V2: in − out; V3: amount0, amount1); undefined for other logs. */
export function swapNet(log: Log, pool: PoolState): [bigint, bigint] | undefined {
  const topic = log.topics[0];
  if (pool.kind === 'v2' && topic === TOPICS.v2Swap) {
    const e = v2PairAbi.parseLog(log)!;
    return [(e.args[1] as bigint) - (e.args[3] as bigint), (e.args[2] as bigint) - (e.args[4] as bigint)];
  }
  if (pool.kind === 'v3' && topic === TOPICS.v3Swap) {
    const e = v3PoolAbi.parseLog(log)!;
    return [e.args[2] as bigint, e.args[3] as bigint];
  }
  return undefined;
}

/**
 * The amounts of both tokens a swap moved (|net| per side of `swapNet`); nothing for tokens whose decimals
 * are unknown. The candles' volume is these times the USD price.
 */
export function swapVolumes(
  log: Log,
  pool: PoolState,
  net: [bigint, bigint],
  decimals: ReadonlyMap<string, number>,
  at: Date,
): SwapVolume[] {
  const out: SwapVolume[] = [];
  const base = { txHash: log.transactionHash.toLowerCase(), logIndex: log.index, block: log.blockNumber, at };
  for (const [token, amount] of [
    [pool.token0, abs(net[0])],
    [pool.token1, abs(net[1])],
  ] as const) {
    const dec = decimals.get(token);
    if (dec !== undefined && amount > 0n) out.push({ ...base, token, amount: toFloat(amount, dec) });
  }
  return out;
}
