import { defineMethod } from '../context.js';
import type { MethodResult } from '../types.js';
import type { RawJson } from '../upstream/raw-json.js';

/**
 * eth_fillTransaction (execution-apis #803): the node fills the transaction and answers it unsigned. An
 * omitted gas makes the node estimate, so the call goes through the pool's compute gate (time budget
 * RPC_EVM_TIMEOUT_MS, RPC_EVM_MAX_CONCURRENT slots, time charged in rate units). The gas is not capped
 * here: a given gas is copied into the answer, never executed, and capping an omitted one would answer the
 * cap instead of the node's estimate; the estimate is bounded by the node (anvil: the block gas limit,
 * geth: --rpc.gascap). Uncached: the nonce and fees move with every block.
 */
export default defineMethod('eth_fillTransaction', async (ctx, params, call) => {
  const raw = await ctx.upstream.compute('eth_fillTransaction', params, { budget: call.budget });
  return raw as RawJson<MethodResult<'eth_fillTransaction'>>;
});
