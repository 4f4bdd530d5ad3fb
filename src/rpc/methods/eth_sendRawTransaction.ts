import { RpcError } from '../../common/errors.js';
import { defineMethod, type RpcContext } from '../context.js';
import { decodeRawTransaction } from '../params/raw-transaction.js';
import type { CallScope } from '../types.js';

/**
 * How nodes say they already have this transaction: in the pool (geth "already known", anvil "transaction
 * already imported", erigon/nethermind "known transaction"), or mined, when its nonce is used ("nonce too
 * low"; also said of another transaction with that nonce, hence the lookup by hash before answering).
 */
const ALREADY_HELD = /already known|already imported|known transaction|nonce too low/i;

/** One unit of the rate limit, as time charged on the reply (ratelimit.ts computeCost). */
export const oneUnit = (ctx: RpcContext, call: CallScope, units = 1): void => {
  if (call.budget) call.budget.computeMs += units * ctx.config.rateLimit.msPerUnit;
};

/**
 * Sends a signed transaction and answers its hash. The size is checked before any decoding
 * (RPC_MAX_RAW_TX_BYTES) and the decode's time is charged like time on the node. Sent to one upstream
 * only: resent to another only when the first provably never got it (connection refused); after an
 * ambiguous failure (timeout, reset, 5xx) the caller gets the error. Idempotent as wallets that retry
 * expect: when the node refuses it as already held or mined and `eth_getTransactionByHash` finds this very
 * transaction, the answer is its hash (one more upstream call, charged one unit).
 */
export async function sendRawTransaction(ctx: RpcContext, raw: string, call: CallScope): Promise<string> {
  const { hash, decodeMs } = decodeRawTransaction(raw, ctx.config.sends.maxRawTxBytes);
  if (call.budget) call.budget.computeMs += decodeMs;
  try {
    return (await ctx.upstream.request('eth_sendRawTransaction', [raw], { write: true, budget: call.budget })) as string;
  } catch (err) {
    if (!(err instanceof RpcError) || !ALREADY_HELD.test(err.message)) throw err;
    oneUnit(ctx, call);
    const held = await ctx.upstream.request('eth_getTransactionByHash', [hash], { budget: call.budget }).catch(() => null);
    if (held !== null && typeof held === 'object' && (held as { hash?: unknown }).hash === hash) return hash;
    throw err;
  }
}

export default defineMethod('eth_sendRawTransaction', (ctx, [raw], call) => sendRawTransaction(ctx, raw, call));
