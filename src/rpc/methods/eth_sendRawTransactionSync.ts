import { RpcError } from '../../common/errors.js';
import type { HeadTracker } from '../head/tracker.js';
import { defineMethod } from '../context.js';
import type { MethodResult } from '../types.js';
import { chargeUnits, sendRawTransaction } from './eth_sendRawTransaction.js';

type Receipt = MethodResult<'eth_sendRawTransactionSync'>;

/** EIP-7966's code for "sent, but no receipt within the wait". */
const TIMED_OUT = 4;

/**
 * The wait asked for, in ms: none, 0 or more than RPC_SEND_SYNC_TIMEOUT_MS waits that long (geth and erigon cap the
 * same way).
 */
function syncWaitMs(asked: string | number | undefined, capMs: number): number {
  if (asked === undefined) return capMs;
  const ms = BigInt(asked);
  return ms === 0n || ms > BigInt(capMs) ? capMs : Number(ms);
}

/**
 * Resolves on the head tracker's next move (true) or after `ms` (false). One listener per waiting call,
 * removed when it resolves: a wait costs a timer and a set entry, and the node is asked nothing by it.
 */
function nextHead(tracker: HeadTracker, seen: number, ms: number): Promise<boolean> {
  if (tracker.version !== seen) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (moved: boolean) => {
      clearTimeout(timer);
      stop();
      resolve(moved);
    };
    const stop = tracker.subscribe(() => done(true));
    const timer = setTimeout(() => done(false), ms);
  });
}

/**
 * eth_sendRawTransactionSync (EIP-7966): eth_sendRawTransaction (size cap, decode charged, idempotent
 * re-send), then the receipt: asked once right after the send (an automining node has it already) and once
 * per new head the pool's tracker reports, until the wait is over; then error 4 with the hash as data.
 * Each receipt lookup after the first costs one rate unit.
 */
export default defineMethod('eth_sendRawTransactionSync', async (ctx, [raw, timeoutMs], call) => {
  const waitMs = syncWaitMs(timeoutMs, ctx.config.sends.syncTimeoutMs);
  const deadline = performance.now() + waitMs;
  const tracker = ctx.upstream.tracker;
  const hash = await sendRawTransaction(ctx, raw, call);
  for (let lookups = 0; ; lookups++) {
    if (lookups > 0) chargeUnits(call, 1);
    // Taken before the lookup: a block that lands while it is on its way wakes the wait below at once.
    const seen = tracker.version;
    const receipt = await ctx.upstream.request('eth_getTransactionReceipt', [hash], { budget: call.budget });
    if (receipt !== null && typeof receipt === 'object') return receipt as Receipt;
    const left = deadline - performance.now();
    if (left <= 0 || !(await nextHead(tracker, seen, left))) {
      throw new RpcError(
        TIMED_OUT,
        `The transaction was added to the transaction pool but wasn't processed in ${waitMs} ms (the wait is at most RPC_SEND_SYNC_TIMEOUT_MS = ${ctx.config.sends.syncTimeoutMs} ms); look it up by hash`,
        hash,
      );
    }
  }
});
