import type { Quantity } from '../../../generated/rpc/methods.js';
import { defineMethod, upstreamAnswer } from '../context.js';
import { RawJson } from '../upstream/raw-json.js';

/**
 * eth_blockNumber: the head tracker's block while it is live (a node pushes its new heads and no write
 * went through since the last one: see head/tracker.ts and docs/rpc-speed.md "Head tracker"), answered now (no
 * promise); otherwise the node's.
 */
export default defineMethod('eth_blockNumber', (ctx, _params, call) => {
  const head = ctx.upstream.tracker.head;
  if (head !== undefined && ctx.upstream.headIsLive) return new RawJson<Quantity>(`"0x${head.number.toString(16)}"`);
  return upstreamAnswer(ctx, 'eth_blockNumber', [], call, { uncached: true });
});
