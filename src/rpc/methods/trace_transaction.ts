import { defineMethod } from '../context.js';
import { notServed } from '../net-fallback.js';
import { parityFromCallTrace, type CallFrame, type TxInfo } from '../trace/parity.js';
import { inTraceSlot, tracedRaw, txTraceLifetime } from '../trace/gate.js';
import type { ParityTrace } from '../../../generated/rpc/methods.js';
import type { RawJson } from '../upstream/raw-json.js';

/**
 * Parsed from the text, not through RawJson.value: that keeps the parse with the answer, and a cached one would hold it
 * uncounted.
 */
const parsed = <T>(raw: RawJson): T => JSON.parse(raw.text) as T;

/**
 * trace_transaction: from the upstream when it serves the method (RPC_TRACE_TRANSACTION_SOURCE auto or
 * upstream), otherwise converted from debug_traceTransaction's callTracer output. null for an unknown
 * or not yet mined transaction. Gated as every trace is (trace/gate.ts): one slot of the client's for the
 * whole call, the node's traces through the compute gate, kept once their block is final.
 */
export default defineMethod('trace_transaction', (ctx, [hash], call) =>
  inTraceSlot(ctx, call, async (arrived) => {
    const lifetime = await txTraceLifetime(ctx, hash);
    const source = ctx.config.traceTransactionSource;
    if (source === 'upstream' || (source === 'auto' && ctx.upstream.isSupported('trace_transaction'))) {
      try {
        const traces = parsed<ParityTrace[] | null>(
          await tracedRaw(ctx, 'trace_transaction', [hash], call, lifetime, arrived),
        );
        if (traces && traces.length > 0) return traces;
        const tx = await ctx.upstream.request('eth_getTransactionByHash', [hash]);
        return tx === null ? null : (traces ?? null);
      } catch (err) {
        if (source === 'upstream' || !notServed(err)) throw err;
        ctx.upstream.markUnsupported('trace_transaction');
        ctx.logger.info('the upstream does not serve trace_transaction; converting callTracer output instead');
      }
    }
    const tx = (await ctx.upstream.request('eth_getTransactionByHash', [hash])) as TxInfo | null;
    if (tx === null || tx.blockNumber === null) return null;
    const trace = parsed<CallFrame>(
      await tracedRaw(ctx, 'debug_traceTransaction', [hash, { tracer: 'callTracer' }], call, lifetime, arrived),
    );
    return parityFromCallTrace(trace, tx);
  }),
);
