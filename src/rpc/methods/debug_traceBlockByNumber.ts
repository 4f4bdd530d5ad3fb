import { defineMethod } from '../context.js';

interface Entry {
  txHash?: string;
  result: unknown;
}

/**
 * debug_traceBlockByNumber: every entry is {txHash, result}. Some nodes (older anvil) leave txHash out;
 * it is filled from the block's transaction list, which has the same order.
 */
export default defineMethod('debug_traceBlockByNumber', async (ctx, params) => {
  const entries = (await ctx.upstream.request('debug_traceBlockByNumber', params)) as Entry[];
  if (entries.every((e) => typeof e.txHash === 'string')) return entries.map((e) => ({ txHash: e.txHash, result: e.result }));
  const block = (await ctx.upstream.request('eth_getBlockByNumber', [params[0], false])) as { transactions: string[] } | null;
  const hashes = block?.transactions ?? [];
  return entries.map((e, i) => ({ txHash: e.txHash ?? hashes[i], result: e.result }));
});
