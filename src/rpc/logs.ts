import type { ResponseBudget } from './response-budget.js';
import { rpcErrors } from '../common/errors.js';
import type { RpcContext } from './context.js';
import { checkCriteria } from './filters/caps.js';
import { arrayLongerThan, type RawJson } from './upstream/raw-json.js';
import type { Filter, Log } from '../../generated/rpc/methods.js';
import { blockLifetime } from './cache/policy.js';


const hex = (n: bigint) => `0x${n.toString(16)}`;

/**
 * The head to resolve `latest` against: the head tracker's. `fresh`: it must be as new as the nodes'
 * (filter creation and polls): the tracker's while a node pushes new heads to it, else after one poll
 * shared by every caller waiting at that moment (pool.ts freshHead).
 */
export async function currentHead(ctx: RpcContext, fresh = false): Promise<bigint> {
  const tracked = ctx.upstream.tracker.head?.number ?? ctx.upstream.head;
  if (!fresh && tracked !== undefined) return tracked;
  return ctx.upstream.freshHead();
}

/** Resolves a log bound (hex, latest or earliest: the spec already refused anything else). */
export function resolveBound(bound: string | undefined, head: bigint): bigint {
  if (bound === undefined || bound === 'latest') return head;
  if (bound === 'earliest') return 0n;
  return BigInt(bound);
}

export function rangeCapError(ctx: RpcContext, from: bigint, to: bigint) {
  const cap = ctx.config.maxLogsBlockRange;
  return rpcErrors.limitExceeded(
    `block range too large: ${to - from + 1n} blocks (${hex(from)} to ${hex(to)}); at most ${cap} blocks per query (RPC_MAX_LOGS_BLOCK_RANGE). Narrow the range and retry.`,
    { cap: 'RPC_MAX_LOGS_BLOCK_RANGE', limit: cap, fromBlock: hex(from), toBlock: hex(to) },
  );
}

export function resultCapError(ctx: RpcContext, count: number) {
  const cap = ctx.config.maxLogsResults;
  return rpcErrors.limitExceeded(
    `query returned more than ${cap} results (RPC_MAX_LOGS_RESULTS: ${cap}); got ${count}. Narrow the range and retry.`,
    { cap: 'RPC_MAX_LOGS_RESULTS', limit: cap },
  );
}

/**
 * eth_getLogs with the endpoint's rules: blockHash wins over a range (the bounds are dropped before the
 * upstream sees them), the range and the result count are capped. Tags go to the upstream unchanged, so
 * `latest` means the upstream's latest; the range check resolves it against the tracked head. Addresses
 * and topics are capped like a filter's (RPC_MAX_FILTER_ADDRESSES, RPC_MAX_FILTER_TOPICS).
 */
export async function getLogs(ctx: RpcContext, filter: Filter, budget?: ResponseBudget): Promise<RawJson<Log[]>> {
  checkCriteria(ctx.config, filter);
  let forwarded: Filter;
  if (filter.blockHash !== undefined) {
    forwarded = { blockHash: filter.blockHash };
  } else {
    const needHead = [filter.fromBlock, filter.toBlock].some((b) => b === undefined || b === 'latest');
    const head = needHead ? await currentHead(ctx) : 0n;
    const from = resolveBound(filter.fromBlock, head);
    const to = resolveBound(filter.toBlock, head);
    if (to >= from && to - from + 1n > BigInt(ctx.config.maxLogsBlockRange)) throw rangeCapError(ctx, from, to);
    forwarded = { fromBlock: filter.fromBlock ?? 'latest', toBlock: filter.toBlock ?? 'latest' };
  }
  if (filter.address !== undefined) forwarded.address = filter.address;
  if (filter.topics !== undefined) forwarded.topics = filter.topics;
  const logs = await logsOf(ctx, forwarded, filter.blockHash === undefined, budget);
  // Counted on the node's text (no parse): a 1,000-log answer is ~600 KB.
  const { over, count } = arrayLongerThan(logs, ctx.config.maxLogsResults);
  if (over) throw resultCapError(ctx, count!);
  // The node's text, counted but not parsed: trusted to be the standard method's Log[].
  return logs;
}

/**
 * The node's eth_getLogs answer to `forwarded`, through the answer cache when `cacheable`. Logs of a
 * range ending at or below the finalized block never change; ending at `latest` or a recent block, they
 * hold until the head moves (cache/policy.ts). By block hash: not kept (an unknown hash answers []).
 * Filter polls come here too: polls of filters with the same criteria at the same head share one answer.
 */
export async function logsOf(ctx: RpcContext, forwarded: Filter, cacheable: boolean, budget?: ResponseBudget): Promise<RawJson<Log[]>> {
  const { cache, upstream } = ctx;
  const lifetime = cache.enabled && cacheable ? blockLifetime(forwarded.toBlock, upstream.tracker, upstream.headIsLive) : undefined;
  const key = lifetime ? `eth_getLogs${JSON.stringify(forwarded)}` : '';
  if (lifetime) {
    const hit = cache.get(key);
    if (hit) return hit as RawJson<Log[]>;
  }
  const version = upstream.tracker.version;
  const logs = await upstream.requestRaw('eth_getLogs', [forwarded], { budget });
  if (lifetime === 'final' || (lifetime === 'head' && upstream.headIsLive && upstream.tracker.version === version)) cache.set(key, logs, lifetime);
  return logs as RawJson<Log[]>;
}
