import { defineMethod } from '../context.js';
import { blockTraces } from '../trace/block.js';

/**
 * debug_traceBlockByHash: the tracer rule of debug_traceBlockByNumber (the spec's TraceOptions only admit
 * callTracer and prestateTracer, so other tracers never reach the node), gated as every trace is
 * (trace/gate.ts). A block by hash never changes, so its trace is kept in the answer cache.
 */
export default defineMethod('debug_traceBlockByHash', (ctx, params, call) =>
  blockTraces(ctx, 'debug_traceBlockByHash', params, call),
);
