import { rpcErrors } from '../common/errors.js';
import type { RpcContext } from './context.js';
import { checkCriteria } from './filters/caps.js';
import { arrayLongerThan, CLOSE_ARRAY, CLOSE_OBJECT, isSpace, OPEN_ARRAY, RawJson } from './upstream/raw-json.js';
import { responseTooLarge, type ResponseBudget } from './response-budget.js';
import type { Filter, Log } from '../../generated/rpc/methods.js';
import { blockLifetime } from './cache/policy.js';
import { quotaExceeded } from './ratelimit.js';
import { quantity, type CallScope } from './types.js';

/**
 * Log ranges (eth_getLogs, eth_getFilterLogs, filter polls): bounds resolved against the head, the range and
 * result caps, and a wide range read from the node in chunks under the reply's byte budget.
 */

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

function rangeCapError(ctx: RpcContext, from: bigint, to: bigint) {
  const cap = ctx.config.maxLogsBlockRange;
  return rpcErrors.limitExceeded(
    `block range too large: ${to - from + 1n} blocks (${quantity(from)} to ${quantity(to)}); at most ${cap} blocks per query (RPC_MAX_LOGS_BLOCK_RANGE). Narrow the range and retry.`,
    { cap: 'RPC_MAX_LOGS_BLOCK_RANGE', limit: cap, fromBlock: quantity(from), toBlock: quantity(to) },
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
 * and topics are capped like a filter's (RPC_MAX_FILTER_ADDRESSES, RPC_MAX_FILTER_TOPICS). A range wider
 * than RPC_LOGS_CHUNK_BLOCKS goes to the node in chunks under the reply's byte budget (chunkedLogs below),
 * at most RPC_LOGS_WIDE_MAX_PER_CLIENT such queries per client at once (more wait up to RPC_EVM_TIMEOUT_MS).
 */
export async function getLogs(ctx: RpcContext, filter: Filter, scope: CallScope = {}): Promise<RawJson<Log[]>> {
  checkCriteria(ctx.config, filter);
  const criteria: Filter = {};
  if (filter.address !== undefined) criteria.address = filter.address;
  if (filter.topics !== undefined) criteria.topics = filter.topics;
  if (filter.blockHash !== undefined)
    return capped(
      ctx,
      await logsOf(ctx, { blockHash: filter.blockHash, ...criteria }, false, scope.budget),
      scope.budget,
    );
  const needHead = [filter.fromBlock, filter.toBlock].some((b) => b === undefined || b === 'latest');
  const head = needHead ? await currentHead(ctx) : 0n;
  const from = resolveBound(filter.fromBlock, head);
  const to = resolveBound(filter.toBlock, head);
  if (to >= from && to - from + 1n > BigInt(ctx.config.maxLogsBlockRange)) throw rangeCapError(ctx, from, to);
  const forwarded: Filter = {
    fromBlock: filter.fromBlock ?? 'latest',
    toBlock: filter.toBlock ?? 'latest',
    ...criteria,
  };
  if (to < from || to - from + 1n <= BigInt(ctx.config.logs.chunkBlocks))
    return capped(ctx, await logsOf(ctx, forwarded, true, scope.budget), scope.budget);
  const release = await ctx.quotas.wideLogs.take(scope.client);
  if (!release)
    throw quotaExceeded(
      `eth_getLogs over ${ctx.config.logs.chunkBlocks} blocks (RPC_LOGS_CHUNK_BLOCKS)`,
      ctx.config.logs.wideMaxPerClient,
      'RPC_LOGS_WIDE_MAX_PER_CLIENT',
      ctx.config.evm.timeoutMs,
    );
  try {
    return await chunkedLogs(ctx, forwarded, from, to, scope.budget);
  } finally {
    release();
  }
}

/**
 * The node's text, counted but not parsed (a 1,000-log answer is ~600 KB): trusted to be the standard method's
 * Log[]. Refused past the result cap, its bytes charged all the same (the node returned them).
 */
function capped(ctx: RpcContext, logs: RawJson<Log[]>, budget: ResponseBudget | undefined): RawJson<Log[]> {
  const { over, count } = arrayLongerThan(logs, ctx.config.maxLogsResults);
  if (!over) return logs;
  if (budget) budget.dropped += logs.length;
  throw resultCapError(ctx, count!);
}

/**
 * The node's eth_getLogs answer to `forwarded`, through the answer cache when `cacheable`. Logs of a
 * range ending at or below the finalized block never change; ending at `latest` or a recent block, they
 * hold until the head moves (cache/policy.ts). By block hash: not kept (an unknown hash answers []).
 * Filter polls come here too: polls of filters with the same criteria at the same head share one answer.
 */
export async function logsOf(
  ctx: RpcContext,
  forwarded: Filter,
  cacheable: boolean,
  budget?: ResponseBudget,
): Promise<RawJson<Log[]>> {
  const { cache, upstream } = ctx;
  const lifetime =
    cache.enabled && cacheable ? blockLifetime(forwarded.toBlock, upstream.tracker, upstream.headIsLive) : undefined;
  const key = lifetime ? `eth_getLogs${JSON.stringify(forwarded)}` : '';
  if (lifetime) {
    const hit = cache.get(key);
    if (hit) return hit as RawJson<Log[]>;
  }
  const version = upstream.tracker.version;
  const logs = await upstream.requestRaw('eth_getLogs', [forwarded], { budget });
  if (lifetime === 'final' || (lifetime === 'head' && upstream.headIsLive && upstream.tracker.version === version))
    cache.set(key, logs, lifetime);
  return logs as RawJson<Log[]>;
}

/**
 * A wide eth_getLogs range asked of the node in chunks of blocks under a running byte budget, so the node
 * never builds more than the reply's budget plus one chunk (before, anvil built 134 MB for a 118-block range
 * of 500 logs each, then the reply's budget refused it). The first chunk is RPC_LOGS_CHUNK_BLOCKS blocks;
 * each next one is sized by the bytes per block seen so far to what is left of the budget (at least one
 * block, at most twice the one before). The answer is the node's chunks joined in block order: for a range
 * that fits, the same bytes the node answers for the whole range (a differential test holds it).
 */

const COMMA_BYTES = Buffer.from(',');
const OPEN_BYTES = Buffer.from('[');
const CLOSE_BYTES = Buffer.from(']');

/** The elements of a node's array text as bytes, without its brackets (empty for []). */
function innerOf(raw: RawJson): Buffer {
  const b = raw.bytes;
  let start = 0;
  let end = b.length;
  while (start < end && isSpace(b[start]!)) start++;
  while (end > start && isSpace(b[end - 1]!)) end--;
  if (b[start] !== OPEN_ARRAY || b[end - 1] !== CLOSE_ARRAY)
    throw new Error(`eth_getLogs: the node answered something other than an array (${raw.head(80)})`);
  start++;
  end--;
  while (start < end && isSpace(b[start]!)) start++;
  while (end > start && isSpace(b[end - 1]!)) end--;
  return b.subarray(start, end);
}

/** Objects in `inner`: a log is one flat object, so its `}` count is its log count. */
function objectsIn(inner: Buffer): number {
  let n = 0;
  for (let i = inner.indexOf(CLOSE_OBJECT); i !== -1; i = inner.indexOf(CLOSE_OBJECT, i + 1)) n++;
  return n;
}

/**
 * The whole range's logs, or -32005 naming RPC_MAX_RESPONSE_BYTES once the chunks so far pass what is left of
 * the budget (RPC_MAX_LOGS_RESULTS once they hold more logs than that).
 */
async function chunkedLogs(
  ctx: RpcContext,
  filter: Filter,
  from: bigint,
  to: bigint,
  budget: ResponseBudget | undefined,
): Promise<RawJson<Log[]>> {
  const limit = budget ? budget.left : ctx.config.maxResponseBytes;
  const maxChunk = BigInt(ctx.config.maxLogsBlockRange);
  const parts: Buffer[] = [];
  let bytes = 2;
  let count = 0;
  let size = BigInt(ctx.config.logs.chunkBlocks);
  for (let start = from; start <= to;) {
    const end = start + size - 1n < to ? start + size - 1n : to;
    // The last chunk keeps the client's own upper bound (`latest` stays the node's latest). Each chunk goes
    // through the answer cache like any logs answer.
    const inner = innerOf(
      await logsOf(
        ctx,
        { ...filter, fromBlock: quantity(start), toBlock: end === to ? filter.toBlock : quantity(end) },
        true,
        budget,
      ),
    );
    if (inner.length > 0) {
      bytes += inner.length + (parts.length > 0 ? 1 : 0);
      parts.push(inner);
      count += objectsIn(inner);
    }
    if (bytes > limit) {
      // The node built and sent these bytes: charged (ratelimit.ts replyCost), and the reply's budget is spent.
      if (budget) {
        budget.dropped += bytes;
        budget.fits(bytes);
      }
      throw responseTooLarge(budget?.limit ?? ctx.config.maxResponseBytes);
    }
    // Past the result cap nothing more is asked: refused as a whole answer over it would be, the bytes charged.
    if (count > ctx.config.maxLogsResults) {
      if (budget) budget.dropped += bytes;
      throw resultCapError(ctx, count);
    }
    const done = end - from + 1n;
    const perBlock = BigInt(Math.ceil(bytes / Number(done)));
    const fitting = perBlock > 0n ? BigInt(limit - bytes) / perBlock : maxChunk;
    size = [2n * size, fitting, maxChunk].reduce((a, b) => (b < a ? b : a));
    if (size < 1n) size = 1n;
    start = end + 1n;
  }
  const joined: Buffer[] = [OPEN_BYTES];
  parts.forEach((p, i) => joined.push(...(i > 0 ? [COMMA_BYTES, p] : [p])));
  joined.push(CLOSE_BYTES);
  return RawJson.ofAscii<Log[]>(Buffer.concat(joined));
}
