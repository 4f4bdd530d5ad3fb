import type { TraceResult } from '../../../generated/rpc/methods.js';
import { RpcError } from '../../common/errors.js';
import { defineMethod, upstreamCall } from '../context.js';
import { RpcCodes } from '../errors.js';

/** An entry as some nodes write it: the spec's BlockTraceEntry, but txHash may be missing. */
interface NodeEntry {
  txHash?: string;
  result: TraceResult;
}

/**
 * debug_traceBlockByHash: the tracer rule of debug_traceBlockByNumber (the spec's TraceOptions only admit
 * callTracer and prestateTracer, so other tracers never reach the node), and every entry is {txHash,
 * result}: a txHash the node left out is filled from the block's transaction list, which has the same order.
 */
export default defineMethod('debug_traceBlockByHash', async (ctx, params) => {
  const entries = (await ctx.upstream.request('debug_traceBlockByHash', params)) as NodeEntry[];
  const block = entries.every((e) => typeof e.txHash === 'string') ? null : await upstreamCall(ctx, 'eth_getBlockByHash', [params[0], false]);
  const hashes = (block?.transactions ?? []).map((t) => (typeof t === 'string' ? t : t.hash));
  return entries.map((e, i) => {
    const txHash = e.txHash ?? hashes[i];
    if (txHash === undefined) throw new RpcError(RpcCodes.ResourceUnavailable, `the node traced ${entries.length} transactions but its block lists ${hashes.length}; try again`);
    return { txHash, result: e.result };
  });
});
