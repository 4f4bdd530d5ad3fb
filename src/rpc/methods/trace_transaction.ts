import { RpcError } from '../../common/errors.js';
import { defineMethod, upstreamCall } from '../context.js';
import { parityFromCallTrace, type CallFrame, type TxInfo } from '../trace/parity.js';

const notServed = (err: unknown) =>
  err instanceof RpcError && (err.code === -32601 || err.code === -32004 || /method .*(not found|not supported|does not exist|not available)/i.test(err.message));

/**
 * trace_transaction: from the upstream when it serves the method (RPC_TRACE_TRANSACTION_SOURCE auto or
 * upstream), otherwise converted from debug_traceTransaction's callTracer output. null for an unknown
 * or not yet mined transaction.
 */
export default defineMethod('trace_transaction', async (ctx, [hash]) => {
  const source = ctx.config.traceTransactionSource;
  if (source === 'upstream' || (source === 'auto' && ctx.upstream.isSupported('trace_transaction'))) {
    try {
      const traces = await upstreamCall(ctx, 'trace_transaction', [hash]);
      if (traces && traces.length > 0) return traces;
      const tx = await upstreamCall(ctx, 'eth_getTransactionByHash', [hash]);
      return tx === null ? null : (traces ?? null);
    } catch (err) {
      if (source === 'upstream' || !notServed(err)) throw err;
      ctx.upstream.markUnsupported('trace_transaction');
      ctx.logger.info('the upstream does not serve trace_transaction; converting callTracer output instead');
    }
  }
  const tx = (await ctx.upstream.request('eth_getTransactionByHash', [hash])) as TxInfo | null;
  if (tx === null || tx.blockNumber === null) return null;
  const trace = (await ctx.upstream.request('debug_traceTransaction', [hash, { tracer: 'callTracer' }])) as CallFrame;
  return parityFromCallTrace(trace, tx);
});
