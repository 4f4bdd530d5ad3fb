import { defineMethod } from '../context.js';
import { boundTracerTimeout, gatedTrace, txTraceLifetime } from '../trace/gate.js';
import type { RawJson } from '../upstream/raw-json.js';
import type { TraceResult } from '../../../generated/rpc/methods.js';

/**
 * debug_traceTransaction: options validated against the spec first (tracer required: callTracer or
 * prestateTracer), then gated as every trace is (trace/gate.ts): the trace of a transaction in a finalized
 * block is kept in the answer cache. The node's text goes out as it is.
 */
export default defineMethod('debug_traceTransaction', async (ctx, [hash, options], call) => {
  const params = [hash, boundTracerTimeout(options, ctx.config.evm.timeoutMs)];
  return (await gatedTrace(
    ctx,
    'debug_traceTransaction',
    params,
    call,
    await txTraceLifetime(ctx, hash),
  )) as RawJson<TraceResult>;
});
