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

/**
 * The amounts of both tokens a Swap log moved (V2: |in − out| per side; V3: |amount| per side); nothing
 * for other logs or tokens whose decimals are unknown. The candles' volume is these times the USD price.
 */
export function poolLogVolumes(
  log: Log,
  pool: PoolState,
  decimals: ReadonlyMap<string, number>,
  at: Date,
): SwapVolume[] {
  const topic = log.topics[0];
  let raw: [bigint, bigint] | undefined;
  if (pool.kind === 'v2' && topic === TOPICS.v2Swap) {
    const e = v2PairAbi.parseLog(log)!;
    raw = [abs((e.args[1] as bigint) - (e.args[3] as bigint)), abs((e.args[2] as bigint) - (e.args[4] as bigint))];
  } else if (pool.kind === 'v3' && topic === TOPICS.v3Swap) {
    const e = v3PoolAbi.parseLog(log)!;
    raw = [abs(e.args[2] as bigint), abs(e.args[3] as bigint)];
  }
  if (!raw) return [];
  const out: SwapVolume[] = [];
  const base = { txHash: log.transactionHash.toLowerCase(), logIndex: log.index, block: log.blockNumber, at };
  for (const [token, amount] of [
    [pool.token0, raw[0]],
    [pool.token1, raw[1]],
  ] as const) {
    const dec = decimals.get(token);
    if (dec !== undefined && amount > 0n) out.push({ ...base, token, amount: toFloat(amount, dec) });
  }
  return out;
}
