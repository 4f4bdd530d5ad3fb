import { rpcErrors, type RpcError } from '../common/errors.js';
import type { CallResult } from './dispatcher.js';
import { toWireError } from './errors.js';
import { RawJson } from './upstream/raw-json.js';

/**
 * The byte budget of one HTTP reply (RPC_MAX_RESPONSE_BYTES). Answers are counted as they arrive; the
 * first answer that does not fit, and every one after it, is replaced by -32005 naming the cap, and calls
 * not yet sent upstream are not sent at all. We truncate rather than refuse the whole batch: the answers
 * that fit were already paid for (upstream work, rate-limit units), the client keeps them and resends only
 * the calls that failed; refusing would make a client retry the whole batch and pay for it again.
 * Passed explicitly with each call (CallScope in context.ts), so the upstream pool sees the budget of the
 * reply a call belongs to. Not AsyncLocalStorage: on Node 20 it turns on promise hooks for the whole
 * process, which measured +20 % CPU per eth_getBalance (autocannon, 32 connections).
 */
export class ResponseBudget {
  /** Bytes of the answers that fit: what the rate limiter charges for after the reply. */
  used = 0;
  full = false;
  /** Milliseconds the reply's calls kept the node executing (pool.ts `compute`): charged like the bytes. */
  computeMs = 0;
  constructor(readonly limit: number) {}
}

/** The limit when the reply's budget is used up; undefined while there is room (or outside a reply). */
export function budgetSpent(b: ResponseBudget | undefined): number | undefined {
  return b?.full ? b.limit : undefined;
}

export function responseTooLarge(cap: number, detail?: string): RpcError {
  const what = detail ?? `the answers of this request would take the reply past ${cap} bytes`;
  return rpcErrors.limitExceeded(
    `response too large: ${what} (RPC_MAX_RESPONSE_BYTES = ${cap}); this call was not answered. Send fewer calls per batch or narrow the query.`,
    { cap: 'RPC_MAX_RESPONSE_BYTES', limit: cap },
  );
}

/** Counts one call's answer against the reply's budget: the answer, or the -32005 error replacing it. */
export function chargeAnswer(out: CallResult, b: ResponseBudget | undefined): CallResult {
  if (!b || !('result' in out)) return out;
  if (b.full) return { error: toWireError(responseTooLarge(b.limit)) };
  // Answers are JSON of hex strings and numbers (ASCII), so string length is the byte count.
  const size = out.result instanceof RawJson ? out.result.length : JSON.stringify(out.result ?? null).length;
  if (b.used + size > b.limit) {
    b.full = true;
    return { error: toWireError(responseTooLarge(b.limit)) };
  }
  b.used += size;
  return out;
}
