import { BaseError } from '../common/errors.js';

/** How a claim's way to the node can fail: the sender's errors and how a failed broadcast is read. */

/** The database nonce ran too far ahead of the chain: claiming pauses until the chain catches up. */
export class NonceGapError extends BaseError {
  override name = 'NonceGapError';
}

/** A signed transaction of another chain (or of none): never sent, whichever path asked for it. */
export class ForeignChainTransactionError extends BaseError {
  override name = 'ForeignChainTransactionError';
}

/**
 * The node answered that it will not take the transaction (or the connection was never made), so it is
 * not in any pool: the nonce can be given back and no submission was used. Anything else (a timeout, a
 * reset connection, a 5xx, an unknown error) may hide an accepted transaction and is treated as such.
 */
export class BroadcastRefusedError extends BaseError {
  override name = 'BroadcastRefusedError';
  constructor(
    message: string,
    readonly insufficientFunds: boolean,
    cause: unknown,
  ) {
    super(message, { cause });
  }
}

const REFUSALS =
  /insufficient funds|underpriced|fee per gas less than|fee cap less than|less than block base fee|nonce too (low|high)|nonce has already been used|intrinsic gas too low|exceeds block gas limit|exceeds the configured cap|invalid chain ?id|invalid sender/i;

/** Whether a failed eth_sendRawTransaction certainly left no transaction in the node's pool. */
export function classifyBroadcastError(err: unknown): { refused: boolean; insufficientFunds: boolean } {
  const e = err as { code?: unknown; message?: string; info?: unknown; error?: unknown; cause?: { code?: unknown } };
  const text = `${e?.message ?? String(err)} ${JSON.stringify(e?.info ?? '')} ${JSON.stringify(e?.error ?? '')}`;
  const insufficientFunds = e?.code === 'INSUFFICIENT_FUNDS' || /insufficient funds/i.test(text);
  const connectionRefused = e?.code === 'ECONNREFUSED' || e?.cause?.code === 'ECONNREFUSED';
  const refused =
    insufficientFunds ||
    connectionRefused ||
    e?.code === 'NONCE_EXPIRED' ||
    e?.code === 'REPLACEMENT_UNDERPRICED' ||
    REFUSALS.test(text);
  return { refused, insufficientFunds };
}
