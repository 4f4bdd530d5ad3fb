import { RpcError } from '../../common/errors.js';
import { defineMethod, type RpcContext } from '../context.js';
import { decodeRawTransaction, rawTransactionSize } from '../params/raw-transaction.js';
import { answerCost } from '../ratelimit.js';
import type { CallScope } from '../types.js';

/**
 * How nodes say they already have this transaction: in the pool (geth "already known", anvil "transaction already
 * imported", erigon/nethermind "known transaction"), or mined, when its nonce is used ("nonce too low"; also said of
 * another transaction with that nonce, hence the lookup by hash before answering).
 */
const ALREADY_HELD = /already known|already imported|known transaction|nonce too low/i;

/** Rate units added to the call's reply (ResponseBudget.units, read once after it by ratelimit.ts replyCost). */
export const chargeUnits = (call: CallScope, units: number): void => {
  if (call.budget && units > 0) call.budget.units += units;
};

/**
 * Sends a signed transaction and answers its hash. Charged by size, whatever the verdict: 1 unit per
 * RPC_RATE_LIMIT_BYTES_PER_UNIT of transaction, as an answer's bytes are (reading, parsing and decoding it are linear
 * in its size: ~11 ms per 32 KiB, about the 10 ms a unit stands for). The size is checked before any decoding
 * (RPC_MAX_RAW_TX_BYTES). Sent to one upstream only: resent to another only when the first provably never got it
 * (connection refused); after an ambiguous failure (timeout, reset, 5xx) the caller gets the error. Idempotent as
 * wallets that retry expect: when the node refuses it as already held or mined and `eth_getTransactionByHash` finds
 * this very transaction, the answer is its hash (one more upstream call, charged one unit).
 */
export async function sendRawTransaction(ctx: RpcContext, raw: string, call: CallScope): Promise<string> {
  chargeUnits(call, answerCost(rawTransactionSize(raw), ctx.config.rateLimit.bytesPerUnit));
  const hash = decodeRawTransaction(raw, ctx.config.sends.maxRawTxBytes);
  try {
    return (await ctx.upstream.request('eth_sendRawTransaction', [raw], {
      write: true,
      budget: call.budget,
    })) as string;
  } catch (err) {
    if (!(err instanceof RpcError) || !ALREADY_HELD.test(err.message)) throw err;
    chargeUnits(call, 1);
    const held = await ctx.upstream
      .request('eth_getTransactionByHash', [hash], { budget: call.budget })
      .catch(() => null);
    if (held !== null && typeof held === 'object' && (held as { hash?: unknown }).hash === hash) return hash;
    throw err;
  }
}

export default defineMethod('eth_sendRawTransaction', (ctx, [raw], call) => sendRawTransaction(ctx, raw, call));
