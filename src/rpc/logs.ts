import type { ResponseBudget } from './response-budget.js';
import { rpcErrors } from '../common/errors.js';
import type { RpcContext } from './context.js';
import { checkCriteria } from './filters/caps.js';

export interface LogCriteria {
  fromBlock?: string;
  toBlock?: string;
  address?: string | string[];
  topics?: (string | string[] | null)[];
  blockHash?: string;
}

const hex = (n: bigint) => `0x${n.toString(16)}`;

/** The head to resolve `latest` against: tracked when fresh, else asked for. */
export async function currentHead(ctx: RpcContext, fresh = false): Promise<bigint> {
  const tracked = ctx.upstream.head;
  if (!fresh && tracked !== undefined) return tracked;
  return BigInt((await ctx.upstream.request('eth_blockNumber', [])) as string);
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
export async function getLogs(ctx: RpcContext, filter: LogCriteria, budget?: ResponseBudget): Promise<unknown[]> {
  checkCriteria(ctx.config, filter);
  let forwarded: LogCriteria;
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
  const logs = (await ctx.upstream.request('eth_getLogs', [forwarded], { budget })) as unknown[];
  if (logs.length > ctx.config.maxLogsResults) throw resultCapError(ctx, logs.length);
  return logs;
}
