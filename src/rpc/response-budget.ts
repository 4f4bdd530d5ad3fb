import { rpcErrors, type RpcError } from '../common/errors.js';

/**
 * The byte budget of one HTTP reply (RPC_MAX_RESPONSE_BYTES). Answers are counted as they arrive; the first answer that
 * does not fit, and every one after it, is replaced by -32005 naming the cap, and calls not yet sent upstream are not
 * sent at all. We truncate rather than refuse the whole batch: the answers that fit were already paid for (upstream
 * work, rate-limit units), the client keeps them and resends only the calls that failed; refusing would make a client
 * retry the whole batch and pay for it again. Passed explicitly with each call (CallScope in types.ts), so the upstream
 * pool sees the budget of the reply a call belongs to. Not AsyncLocalStorage: on Node 20 it turns on promise hooks for
 * the whole process, which measured +20 % CPU per eth_getBalance (autocannon, 32 connections).
 */
export class ResponseBudget {
  /** Bytes of the answers that fit: what the rate limiter charges for after the reply. */
  used = 0;
  full = false;
  /**
   * Bytes the node returned for calls then refused over this budget (a chunked eth_getLogs, log-range.ts): the node
   * built and sent them, so they are charged like the answered bytes, though the client got none.
   */
  dropped = 0;
  /** Milliseconds the reply's calls kept the node executing (pool.ts `compute`): charged like the bytes. */
  computeMs = 0;
  /**
   * Rate units a call adds for what it cost before or beside the node's answer: a raw transaction's size (1 per
   * RPC_RATE_LIMIT_BYTES_PER_UNIT, what reading and decoding it cost us) and the extra lookups of a re-send or a
   * synchronous send (eth_sendRawTransaction*.ts).
   */
  units = 0;
  constructor(readonly limit: number) {}

  /**
   * Counts an answer of `size` bytes: true when it fits; false when it does not, and the budget is full from then on
   * (every later answer of the reply is refused too, and calls not yet sent are not sent).
   */
  fits(size: number): boolean {
    if (this.full) return false;
    if (this.used + size > this.limit) {
      this.full = true;
      return false;
    }
    this.used += size;
    return true;
  }

  /** Bytes still free in this reply. */
  get left(): number {
    return this.full ? 0 : this.limit - this.used;
  }
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
