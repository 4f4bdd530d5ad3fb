import { defineMethod } from '../context.js';
import { blockTraces } from '../trace/block.js';

/**
 * debug_traceBlockByNumber: gated as every trace is (trace/gate.ts); the trace of a block at or below the
 * finalized one is kept in the answer cache, one of a recent block until the head moves.
 */
export default defineMethod('debug_traceBlockByNumber', (ctx, params, call) =>
  blockTraces(ctx, 'debug_traceBlockByNumber', params, call),
);
