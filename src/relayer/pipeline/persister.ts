import { Transaction, type TransactionReceipt } from 'ethers';
import { describeRevert } from '../chain.js';
import type { MessageRow } from '../db/repository.js';
import type { DirectionContext } from './context.js';
import { isClaimedOnChain } from './claiming.js';

const REBROADCAST_AFTER_MS = 10_000;
const CLEARED_CLAIM = { claim_tx_hash: null, claim_tx_nonce: null, claim_tx_raw: null, claim_tx_created_at: null };

/**
 * Resolves PENDING claims from their receipts: success → CLAIMED_SUCCESS; a revert is replayed at its
 * block to learn why (the L1 rate limit sends the message back to SENT, a claim lost to another claimer
 * is CLAIMED_SUCCESS, anything else CLAIMED_REVERTED). A transaction the node does not know is
 * rebroadcast from the stored raw bytes; one whose nonce was used by another transaction returns the
 * message for a new attempt.
 */
export function createReceiptPersister(ctx: DirectionContext) {
  const chain = ctx.destination;
  const timeoutMs = ctx.config.claiming.messageSubmissionTimeoutMs;

  async function revertReason(m: MessageRow, receipt: TransactionReceipt): Promise<string> {
    const tx = Transaction.from(m.claim_tx_raw!);
    try {
      await chain.provider.call({ from: ctx.sender.signer.address, to: tx.to, data: tx.data, gasLimit: tx.gasLimit, blockTag: receipt.blockNumber });
      return 'reverted (the replay at its block succeeds; out of gas or state changed within the block)';
    } catch (err) {
      return describeRevert(chain.iface, err);
    }
  }

  async function resolve(m: MessageRow): Promise<void> {
    const receipt = await chain.provider.getTransactionReceipt(m.claim_tx_hash!);
    if (receipt) {
      const labels = { direction: ctx.direction };
      if (receipt.status === 1) {
        if (await ctx.repo.transition(m.id, ['PENDING'], 'CLAIMED_SUCCESS', { claimed_at: new Date() })) {
          if (m.anchored_at) ctx.metrics.claimLatency.observe(labels, Math.max(Date.now() - new Date(m.anchored_at).getTime(), 0) / 1_000);
          ctx.metrics.claimsResolved.inc({ ...labels, status: 'CLAIMED_SUCCESS' });
          if (m.is_sponsored) ctx.metrics.sponsoredWei.inc(labels, Number(receipt.gasUsed * receipt.gasPrice));
        }
        return;
      }
      const reason = await revertReason(m, receipt);
      if (reason.startsWith('RateLimitExceeded')) {
        await ctx.repo.transition(m.id, ['PENDING'], 'SENT', { ...CLEARED_CLAIM, merkle_root: null, leaf_index: null, proof: null }, `claim ${m.claim_tx_hash} reverted: L1 rate limit; retried later`);
      } else if (await isClaimedOnChain(ctx, m)) {
        await ctx.repo.transition(m.id, ['PENDING'], 'CLAIMED_SUCCESS', { claimed_at: new Date() }, `claimed by another transaction; our claim ${m.claim_tx_hash} reverted`);
      } else {
        await ctx.repo.transition(m.id, ['PENDING'], 'CLAIMED_REVERTED', { claimed_at: new Date() }, `claim ${m.claim_tx_hash} reverted: ${reason}`);
        ctx.metrics.claimsResolved.inc({ ...labels, status: 'CLAIMED_REVERTED' });
      }
      return;
    }
    const mined = await chain.provider.getTransactionCount(ctx.sender.signer.address, 'latest');
    if (Number(m.claim_tx_nonce) < mined) {
      // Our nonce is used and our transaction has no receipt: it was replaced (or the gap filled).
      // Look again first: it may have been mined between the two reads.
      if (await chain.provider.getTransactionReceipt(m.claim_tx_hash!)) return;
      if (await isClaimedOnChain(ctx, m)) await ctx.repo.transition(m.id, ['PENDING'], 'CLAIMED_SUCCESS', { claimed_at: new Date() }, 'claimed by another transaction');
      else await ctx.repo.transition(m.id, ['PENDING'], 'ANCHORED', CLEARED_CLAIM, `claim transaction ${m.claim_tx_hash} was replaced; claiming again`);
      return;
    }
    const age = m.claim_tx_created_at ? Date.now() - new Date(m.claim_tx_created_at).getTime() : 0;
    // Rebroadcast only what this process is not about to broadcast anyway (e.g. after a crash or a dropped tx).
    if (age > REBROADCAST_AFTER_MS && !ctx.sender.isQueued(m.claim_tx_hash!) && !(await chain.provider.getTransaction(m.claim_tx_hash!))) {
      ctx.logger.warn({ message: m.message_hash, tx: m.claim_tx_hash }, 'claim transaction unknown to the node; rebroadcasting');
      await ctx.sender.broadcast(m.claim_tx_raw!);
    }
    if (age > timeoutMs && !m.failure_reason) {
      await ctx.repo.annotate(m.id, 'PENDING', { failure_reason: `no receipt after MESSAGE_SUBMISSION_TIMEOUT (${timeoutMs} ms)` });
    }
  }

  return async function tick(): Promise<boolean> {
    const rows = await ctx.repo.due(ctx.direction, ['PENDING'], ctx.config.maxFetchMessagesFromDb);
    const results = await Promise.allSettled(rows.map(resolve));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return false;
  };
}
