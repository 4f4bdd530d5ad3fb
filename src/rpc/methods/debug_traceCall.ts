import { defineMethod } from '../context.js';
import { computeAnswer } from '../evm-bounds.js';

/**
 * debug_traceCall: options validated against the spec first (tracer required: callTracer or prestateTracer),
 * then answered by the upstream, gas bounded by RPC_GAS_CAP and time by RPC_EVM_TIMEOUT_MS (evm-bounds.ts).
 */
export default defineMethod('debug_traceCall', (ctx, params, call) => computeAnswer(ctx, 'debug_traceCall', params, call));
