import type { BlockTraceEntry, TraceOptions, TraceResult } from '../../../generated/rpc/methods.js';
import { RpcError } from '../../common/errors.js';
import { blockLifetime } from '../cache/policy.js';
import { upstreamCall, type RpcContext } from '../context.js';
import { RpcCodes } from '../errors.js';
import type { CallScope } from '../types.js';
import { arrayLength, type RawJson } from '../upstream/raw-json.js';
import { boundTracerTimeout, gatedTrace } from './gate.js';

/** An entry as some nodes write it: the spec's BlockTraceEntry, but txHash may be missing. */
interface NodeEntry {
  txHash?: string;
  result: TraceResult;
}

/**
 * debug_traceBlockByHash / ByNumber through the trace gate (gate.ts), every entry {txHash, result}. The
 * node's text goes out as it is when every entry has its txHash (anvil 1.7.1); some nodes (older anvil) leave
 * txHash out, and it is filled from the block's transaction list, which has the same order. Kept in the answer
 * cache: by hash for good (a block by hash never changes), by number once final, or until the head moves.
 */
export async function blockTraces(
  ctx: RpcContext,
  method: 'debug_traceBlockByHash' | 'debug_traceBlockByNumber',
  [block, options]: readonly [string, TraceOptions],
  scope: CallScope,
): Promise<RawJson<BlockTraceEntry[]> | BlockTraceEntry[]> {
  const params = [block, boundTracerTimeout(options, ctx.config.evm.timeoutMs)];
  const lifetime =
    method === 'debug_traceBlockByHash' ? 'final' : blockLifetime(block, ctx.upstream.tracker, ctx.upstream.headIsLive);
  const raw = await gatedTrace(ctx, method, params, scope, lifetime);
  // No tracer output has a "txHash" member, so as many of them as entries means every entry has its own;
  // counted on the text, so a passed-through trace (or one in the cache) is never parsed.
  const text = raw.text;
  let named = 0;
  for (let i = text.indexOf('"txHash"'); i !== -1; i = text.indexOf('"txHash"', i + 8)) named++;
  if (named === arrayLength(text)) return raw as RawJson<BlockTraceEntry[]>;
  const entries = JSON.parse(text) as NodeEntry[];
  const header =
    method === 'debug_traceBlockByHash'
      ? await upstreamCall(ctx, 'eth_getBlockByHash', [block, false])
      : await upstreamCall(ctx, 'eth_getBlockByNumber', [block, false]);
  const hashes = (header?.transactions ?? []).map((t) => (typeof t === 'string' ? t : t.hash));
  return entries.map((e, i) => {
    const txHash = e.txHash ?? hashes[i];
    // More traces than transactions: the node's two answers disagree (a reorg in between); the caller retries.
    if (txHash === undefined)
      throw new RpcError(
        RpcCodes.ResourceUnavailable,
        `the node traced ${entries.length} transactions but its block lists ${hashes.length}; try again`,
      );
    return { txHash, result: e.result };
  });
}
