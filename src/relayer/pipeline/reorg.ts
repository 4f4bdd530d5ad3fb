import type { MessageRow } from '../db/repository.js';
import { Status, type MessageStatus } from '../message/status.js';
import { messageSentLogs, type DirectionContext } from './context.js';

export type SourceLookup =
  | { found: true; blockNumber: number; txHash: string; logIndex: number }
  | { found: false }
  /** The origin node has not reached the message's block (a lagging node): nothing can be concluded. */
  | { found: undefined };

/**
 * Where the message's MessageSent is in the origin chain now, looked up by its indexed hash: at its stored
 * block (the usual answer), in a later block (a reorg re-included its transaction), or nowhere (a reorg
 * deeper than the listener's confirmations dropped it). Used only once the destination has shown it will
 * not list the message, so the normal path costs nothing.
 */
export async function locateSource(
  ctx: Pick<DirectionContext, 'origin' | 'originConfig'>,
  m: Pick<MessageRow, 'message_hash' | 'sent_block_number'>,
): Promise<SourceLookup> {
  const from = Number(m.sent_block_number);
  const head = await ctx.origin.provider.getBlockNumber();
  if (head < from) return { found: undefined };
  const to = Math.min(head, from + ctx.originConfig.listener.maxBlocksToFetchLogs - 1);
  const [log] = await messageSentLogs(ctx, from, to, m.message_hash);
  if (!log) return { found: false };
  return { found: true, blockNumber: log.blockNumber, txHash: log.transactionHash.toLowerCase(), logIndex: log.index };
}

/**
 * A reorg removed the message from its origin chain (`evidence`: what showed it): NON_EXECUTABLE from `from`,
 * with the reason, and one warning when it moved.
 */
export async function markReorged(
  ctx: Pick<DirectionContext, 'origin' | 'repo' | 'logger'>,
  m: Pick<MessageRow, 'id' | 'message_hash' | 'sent_block_number' | 'sent_tx_hash'>,
  from: MessageStatus,
  evidence: string,
): Promise<void> {
  const reason =
    `${evidence}; its MessageSent (transaction ${m.sent_tx_hash}, block ${m.sent_block_number}) is no longer in the ${ctx.origin.name} chain: ` +
    `a reorg deeper than ${ctx.origin.name}_LISTENER_BLOCK_CONFIRMATION removed it, so it is never claimed`;
  if (await ctx.repo.transition(m.id, [from], Status.NON_EXECUTABLE, {}, reason))
    ctx.logger.warn(
      { message: m.message_hash, block: m.sent_block_number, tx: m.sent_tx_hash },
      `message removed from ${ctx.origin.name} by a reorg; it is never claimed`,
    );
}
