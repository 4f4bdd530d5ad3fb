import { defineMethod } from '../context.js';
import { computeAnswer } from '../evm-bounds.js';
import { boundTracerTimeout, inTraceSlot } from '../trace/gate.js';

/**
 * debug_traceCall: options validated against the spec first (tracer required: callTracer or prestateTracer),
 * then answered by the upstream, gas bounded by RPC_GAS_CAP and time by RPC_EVM_TIMEOUT_MS (evm-bounds.ts),
 * within the client's trace slots (RPC_TRACE_MAX_PER_CLIENT, trace/gate.ts); a tracer timeout above the
 * budget is lowered to it. A trace at a finalized block is kept in the answer cache (cache/policy.ts).
 */
export default defineMethod('debug_traceCall', (ctx, [tx, block, options], call) => {
  const bounded = boundTracerTimeout(options, ctx.config.evm.timeoutMs);
  return inTraceSlot(ctx, call, (arrived) =>
    computeAnswer(ctx, 'debug_traceCall', [tx, block, bounded], call, { arrived }),
  );
});
