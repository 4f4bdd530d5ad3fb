import { Transaction } from 'ethers';
import { describeRevert } from '../chain.js';
import type { MessageRow } from '../db/repository.js';
import { senderOf, sendersOf, type DirectionContext } from './context.js';
import type { ClaimSender } from '../sender.js';
import { UNCHANGED_ROWS_MAX_AGE_MS } from './loop.js';
import { isClaimedOnChain } from './claim-facts.js';
import { estimateFees } from './fees.js';
import { createBlockReceipts, type Receipt } from './receipts.js';
import { foreignChainReason } from '../tx-chain-id.js';

/** A claim the node does not know is sent again from its stored bytes once it is this old (any nonce). */
const REBROADCAST_AFTER_MS = 10_000;
/**
 * A claim past REBROADCAST_AFTER_MS (not at its signer's lowest nonce) is looked up at most this often: every
 * receipt iteration (a few per second) asked the node about every such claim, 0.7 lookups per claim in the
 * bench's drop phase, while the claim that matters most, at the lowest nonce, has its own faster path.
 */
const AGE_RECHECK_MS = 2_000;
/**
 * The claim at a signer's lowest unmined nonce holds back every later claim of that signer, so it is checked
 * sooner: once it is this old, and at most once per this period while that nonce stands still. Why a second:
 * the node knows a transaction from the moment it accepts it (whatever the block time), and this process's
 * own broadcasts are skipped while they wait in its queue, so the grace only has to cover a broadcast still
 * on its way from another process (a leader that just stopped) and a node whose pools behind one address
 * sync by gossip, both well under a second. It also matches how long the loops reuse an unchanged read
 * (UNCHANGED_ROWS_MAX_AGE_MS). A false alarm costs one lookup and one resend of the same bytes, which the
 * node answers with "already known"; a lost transaction costs every claim behind it this long.
 */
export const LOST_CLAIM_GRACE_MS = 1_000;
/** Further lost claims of a signer sent again in one iteration after its lowest one (see chaseGaps). */
const MAX_GAPS_CHASED = 16;
const CLEARED_CLAIM = { claim_tx_hash: null, claim_tx_nonce: null, claim_tx_raw: null, claim_tx_created_at: null };
const CANCEL_GAS = 21_000n;

interface Success {
  m: MessageRow;
  receipt: Receipt;
}

/** ⌈x × 1.1⌉ (at least x + 1): the smallest fee a node accepts for a replacement at the same nonce. */
export const bumped = (x: bigint) => { const up = (x * 11n + 9n) / 10n; return up > x ? up : x + 1n; };
const max = (a: bigint, b: bigint) => (a > b ? a : b);

/**
 * When each signer's lowest unmined nonce was last looked up at the node: at most once per `periodMs` while
 * that nonce stands still. A new lowest nonce may be looked up at once: it only comes after the chain mined
 * the one before, so the lookups stay bounded by the chain's progress. One entry per signer address.
 */
function createLowestNonceChecks(periodMs: number) {
  const last = new Map<string, { nonce: number; at: number }>();
  return {
    /** Whether `nonce` of `signer` may be looked up now; if so, the lookup is recorded. */
    due(signer: string, nonce: number): boolean {
      const prev = last.get(signer);
      if (prev && prev.nonce === nonce && Date.now() - prev.at < periodMs) return false;
      last.set(signer, { nonce, at: Date.now() });
      return true;
    },
  };
}

/**
 * Resolves PENDING claims from their receipts: success → CLAIMED_SUCCESS; a revert is replayed at its
 * block to learn why (the L1 rate limit sends the message back to SENT, a claim lost to another claimer
 * is CLAIMED_SUCCESS, anything else CLAIMED_REVERTED). A transaction the node does not know is
 * rebroadcast from the stored raw bytes: at once (after LOST_CLAIM_GRACE_MS) at the signer's lowest unmined
 * nonce, which holds back all of its later claims, else after REBROADCAST_AFTER_MS. One whose nonce was used
 * by another transaction returns the message for a new attempt.
 */
export function createReceiptPersister(ctx: DirectionContext) {
  const chain = ctx.destination;
  const senders = sendersOf(ctx);
  const blocks = createBlockReceipts(chain, senders.map((s) => s.signer.address), ctx.logger);
  const receiptByHash = async (hash: string): Promise<Receipt | null> => {
    const r = await chain.provider.getTransactionReceipt(hash);
    return r && { hash: r.hash.toLowerCase(), status: r.status ?? 0, blockNumber: r.blockNumber, gasUsed: r.gasUsed, gasPrice: r.gasPrice };
  };
  const timeoutMs = ctx.config.claiming.messageSubmissionTimeoutMs;
  const lowestChecks = createLowestNonceChecks(LOST_CLAIM_GRACE_MS);
  /** Claims already reported as signed for another chain: one error line each, not one per iteration. */
  const foreignReported = new Set<string>();

  /**
   * A PENDING claim whose stored transaction was signed for another chain than the destination's (the chain pin
   * stops a whole database of other chains at start; this is the guard per row): no receipt, no rebroadcast, no
   * bump or cancellation (those would sign its calldata anew for this chain). Logged once, reason recorded.
   */
  async function foreignClaim(m: MessageRow): Promise<boolean> {
    if (!m.claim_tx_raw) return false;
    const why = foreignChainReason(m.claim_tx_raw, chain.chainId);
    if (!why) return false;
    const reason = `claim ${m.claim_tx_hash} not sent: ${why}; stop the relayer and check the chains (see reset-chain-pin)`;
    if (!foreignReported.has(m.claim_tx_hash!)) {
      foreignReported.add(m.claim_tx_hash!);
      ctx.logger.error({ message: m.message_hash, tx: m.claim_tx_hash, direction: ctx.direction }, reason);
      if (m.failure_reason !== reason) await ctx.repo.annotate(m.id, 'PENDING', { failure_reason: reason });
    }
    return true;
  }
  /** When each claim (by hash) past REBROADCAST_AFTER_MS was last looked up; only claims still PENDING are kept. */
  const ageChecks = new Map<string, number>();
  const ageCheckDue = (hash: string): boolean => {
    const at = ageChecks.get(hash);
    if (at !== undefined && Date.now() - at < AGE_RECHECK_MS) return false;
    ageChecks.set(hash, Date.now());
    return true;
  };

  /** The address that sent a row's claim (rows from before claim_signer: the primary signer). */
  const signerAddress = (m: MessageRow) => m.claim_signer ?? ctx.sender.signer.address;

  async function revertReason(m: MessageRow, receipt: Receipt): Promise<string> {
    const tx = Transaction.from(m.claim_tx_raw!);
    try {
      await chain.provider.call({ from: signerAddress(m), to: tx.to, data: tx.data, gasLimit: tx.gasLimit, blockTag: receipt.blockNumber });
      return 'reverted (the replay at its block succeeds; out of gas or state changed within the block)';
    } catch (err) {
      return describeRevert(chain.iface, err);
    }
  }

  /**
   * The end of a submission cycle (our cancellation, or an older version of the claim, used the nonce):
   * claimed by anyone → CLAIMED_SUCCESS; else a new cycle (ANCHORED), or NEEDS_MANUAL_INTERVENTION after
   * MAX_RETRY_CYCLES cycles or MAX_NUMBER_OF_RETRIES submissions.
   */
  async function endCycle(m: MessageRow, what: string): Promise<void> {
    if (await isClaimedOnChain(ctx, m)) {
      await ctx.repo.transition(m.id, ['PENDING'], 'CLAIMED_SUCCESS', { claimed_at: new Date() }, `claimed by another transaction; ${what}`);
      return;
    }
    const c = ctx.config.claiming;
    const cycles = m.cycles + 1;
    const reset = { ...CLEARED_CLAIM, cycles, bumps: 0, claim_tx_kind: 'claim' as const };
    if (cycles >= c.maxRetryCycles || m.retries >= c.maxNumberOfRetries) {
      const limit = cycles >= c.maxRetryCycles ? `MAX_RETRY_CYCLES (${c.maxRetryCycles})` : `MAX_NUMBER_OF_RETRIES (${c.maxNumberOfRetries})`;
      const reason = `${what}; ${cycles} submission cycle(s) and ${m.retries} submission(s) without a receipt: ${limit} reached`;
      if (await ctx.repo.transition(m.id, ['PENDING'], 'NEEDS_MANUAL_INTERVENTION', reset, reason)) {
        ctx.metrics.claimsResolved.inc({ direction: ctx.direction, status: 'NEEDS_MANUAL_INTERVENTION' });
        ctx.logger.error({ message: m.message_hash, direction: ctx.direction, cycles, retries: m.retries }, `message ${m.message_hash} needs manual intervention: ${reason}`);
      }
      return;
    }
    await ctx.repo.transition(m.id, ['PENDING'], 'ANCHORED', reset, `${what}; submission cycle ${cycles} of ${c.maxRetryCycles} ended, claiming again`);
  }

  /**
   * MESSAGE_SUBMISSION_TIMEOUT passed without a receipt: re-send at the same nonce with fees raised by at
   * least 10 % (a fee bump, MAX_BUMPS_PER_CYCLE per cycle while MAX_NUMBER_OF_RETRIES allows), else cancel
   * with a zero-value transaction to ourselves. The replacement is broadcast before it is recorded: if we
   * crash in between, whichever version is mined uses the nonce and `resolve` sorts it out.
   */
  async function replace(m: MessageRow, sender: ClaimSender | undefined): Promise<void> {
    const c = ctx.config.claiming;
    if (!sender) {
      // Signed by a key no longer configured: only that key can replace its nonce.
      const reason = `no receipt after MESSAGE_SUBMISSION_TIMEOUT (${timeoutMs} ms); signed by ${m.claim_signer}, which is no longer among the ${ctx.destination.name} signer keys: add it back (${ctx.destination.name}_SIGNER_PRIVATE_KEYS) to bump or cancel it`;
      if (m.failure_reason !== reason) await ctx.repo.annotate(m.id, 'PENDING', { failure_reason: reason });
      return;
    }
    const old = Transaction.from(m.claim_tx_raw!);
    const cancelling = m.claim_tx_kind === 'cancel';
    const bump = !cancelling && m.bumps < c.maxBumpsPerCycle && m.retries < c.maxNumberOfRetries;
    const fresh = await estimateFees(chain, c.gasEstimationPercentile, c.maxFeePerGasCap);
    const minFee = bumped(old.maxFeePerGas ?? 0n);
    const minTip = bumped(old.maxPriorityFeePerGas ?? 0n);
    const maxFeePerGas = max(minFee, fresh.maxFeePerGas);
    const maxPriorityFeePerGas = max(minTip, fresh.maxPriorityFeePerGas);
    const what = bump ? 'fee bump' : 'cancellation';
    if (maxFeePerGas > c.maxFeePerGasCap || maxPriorityFeePerGas > maxFeePerGas) {
      const reason = `no receipt after MESSAGE_SUBMISSION_TIMEOUT (${timeoutMs} ms); a ${what} needs max fee ${minFee} wei, above MAX_FEE_PER_GAS_CAP ${c.maxFeePerGasCap}: waiting`;
      if (m.failure_reason !== reason) await ctx.repo.annotate(m.id, 'PENDING', { failure_reason: reason });
      return;
    }
    const nonce = Number(m.claim_tx_nonce);
    const body = bump ? { to: old.to!, data: old.data, gasLimit: old.gasLimit } : { to: sender.signer.address, data: '0x', gasLimit: CANCEL_GAS };
    const signed = await sender.signer.signTransaction({ chainId: chain.chainId, nonce, value: 0n, maxFeePerGas, maxPriorityFeePerGas, ...body });
    const hash = Transaction.from(signed).hash!;
    try {
      await sender.broadcast(signed);
    } catch (err) {
      // The nonce was used meanwhile (a version got mined): the next iteration resolves it.
      if (/nonce too low|NONCE_EXPIRED/i.test(`${(err as Error).message} ${(err as { code?: string }).code}`)) return;
      throw err;
    }
    const reason = bump
      ? `no receipt after MESSAGE_SUBMISSION_TIMEOUT (${timeoutMs} ms): fee bump ${m.bumps + 1} of ${c.maxBumpsPerCycle} in cycle ${m.cycles + 1}, nonce ${nonce}`
      : `no receipt after MESSAGE_SUBMISSION_TIMEOUT (${timeoutMs} ms): cycle ${m.cycles + 1} cancelled at nonce ${nonce}`;
    const patch = { claim_tx_hash: hash, claim_tx_raw: signed, claim_max_fee_per_gas: maxFeePerGas.toString(), claim_max_priority_fee_per_gas: maxPriorityFeePerGas.toString(), claim_tx_kind: bump ? 'claim' as const : 'cancel' as const, failure_reason: reason };
    if (await ctx.repo.replaceClaimTx(m.id, m.claim_tx_hash!, patch, { bump })) {
      ctx.metrics.replacements.inc({ direction: ctx.direction, kind: bump ? 'bump' : 'cancel' });
      ctx.logger.warn({ message: m.message_hash, nonce, signer: sender.signer.address, previous: m.claim_tx_hash, tx: hash, maxFeePerGas: maxFeePerGas.toString() }, bump ? 'claim fee bumped' : 'claim cancelled');
    }
  }

  /**
   * `mined`: the signer's latest nonce, read once per tick. A claim whose nonce is not below it cannot
   * have a receipt yet, so it costs no receipt request. `behindLower`: a lower nonce of ours is still
   * unmined; a claim waiting behind it is not bumped (replacing the lowest one is what unblocks the
   * queue, and bumping every claim behind a lost transaction would multiply fees for nothing).
   */
  async function resolve(m: MessageRow, mined: number, behindLower: boolean, found: Map<string, Receipt>, successes: Success[], signerRows: Map<number, MessageRow>): Promise<void> {
    if (await foreignClaim(m)) return;
    const sender = senderOf(ctx, m);
    const queued = sender?.isQueued(m.claim_tx_hash!) ?? false;
    const unmined = Number(m.claim_tx_nonce) >= mined;
    // Receipts come from the blocks read this tick; one not among them (mined before this process read
    // blocks, or replaced) is asked for by hash.
    const receipt = unmined ? null : (found.get(m.claim_tx_hash!) ?? (await receiptByHash(m.claim_tx_hash!)));
    if (receipt && m.claim_tx_kind === 'cancel') {
      await endCycle(m, `cancellation ${m.claim_tx_hash} mined`);
      return;
    }
    if (receipt) {
      const labels = { direction: ctx.direction };
      if (receipt.status === 1) {
        successes.push({ m, receipt });
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
    if (!unmined) {
      // Our nonce is used and our transaction has no receipt: it was replaced (or the gap filled).
      // Look again first: it may have been mined between the two reads.
      if (await receiptByHash(m.claim_tx_hash!)) return;
      if (m.claim_tx_kind === 'cancel') {
        await endCycle(m, `nonce ${m.claim_tx_nonce} used by an earlier version of the claim`);
        return;
      }
      if (await isClaimedOnChain(ctx, m)) await ctx.repo.transition(m.id, ['PENDING'], 'CLAIMED_SUCCESS', { claimed_at: new Date() }, 'claimed by another transaction');
      else await ctx.repo.transition(m.id, ['PENDING'], 'ANCHORED', CLEARED_CLAIM, `claim transaction ${m.claim_tx_hash} was replaced; claiming again`);
      return;
    }
    const age = m.claim_tx_created_at ? Date.now() - new Date(m.claim_tx_created_at).getTime() : 0;
    // Rebroadcast only what this process is not about to broadcast anyway (e.g. after a crash or a dropped tx).
    // The claim holding back its signer's later nonces is looked up first, before any fee bump: when the node
    // never got it, its stored bytes are all it needs (a bump pays more for the same, and a receipt iteration
    // slower than the grace, under load, would otherwise reach MESSAGE_SUBMISSION_TIMEOUT first).
    const lowest = Number(m.claim_tx_nonce) === mined;
    if (lowest && !queued && age > LOST_CLAIM_GRACE_MS && lowestChecks.due(signerAddress(m), mined)) {
      if (await rebroadcastIfUnknown(m, sender, 'lowest_nonce')) {
        await chaseGaps(signerAddress(m), mined, sender, signerRows);
        return;
      }
    }
    if (age > timeoutMs && !behindLower && !queued) {
      await replace(m, sender);
      return;
    }
    if (!queued && !lowest && age > REBROADCAST_AFTER_MS && ageCheckDue(m.claim_tx_hash!)) await rebroadcastIfUnknown(m, sender, 'age');
  }

  /**
   * Sends a claim the node does not know (eth_getTransactionByHash) again from its stored signed bytes: same
   * nonce, same fees, same hash, so nothing is recorded and no submission is counted. Any signer's broadcast
   * will do, the transaction being signed already; another relayer process sending the same bytes is harmless.
   * The row is read again first: this tick's rows may predate a broadcast of ours that failed and was undone
   * (message returned, nonce given back and perhaps leased again), and the undo is committed before the claim
   * leaves the broadcast queue, so a claim seen unqueued and still PENDING with this hash was not undone.
   * Resolves true when it was sent again (or the row moved on meanwhile): nothing more to do with it this time.
   */
  async function rebroadcastIfUnknown(m: MessageRow, sender: ClaimSender | undefined, trigger: 'lowest_nonce' | 'age'): Promise<boolean> {
    if (!m.claim_tx_raw || (await chain.provider.getTransaction(m.claim_tx_hash!))) return false;
    if (!(await ctx.repo.isPendingWith(String(m.id), m.claim_tx_hash!))) return true;
    const detail = trigger === 'lowest_nonce' ? `it holds back the later nonces of ${signerAddress(m)}` : `no receipt after ${REBROADCAST_AFTER_MS} ms`;
    ctx.logger.warn({ message: m.message_hash, tx: m.claim_tx_hash, nonce: Number(m.claim_tx_nonce), signer: signerAddress(m), trigger }, `claim transaction unknown to the node (${detail}); rebroadcasting`);
    await (sender ?? ctx.sender).broadcast(m.claim_tx_raw);
    ctx.metrics.rebroadcasts.inc({ direction: ctx.direction, trigger });
    return true;
  }

  /**
   * After the lowest claim of a signer was sent again, the next claim the node lacks is often a few nonces on
   * (claims are signed in batches, and a batch can lose several): the node's pending nonce names it, being the
   * first nonce its pool is missing. Each is sent again in this iteration rather than one per iteration (an
   * iteration under load takes seconds, and the rest waited for the 10 s rule). No grace here: the node has
   * just shown that it lacks that nonce, a claim still in our broadcast queue is skipped, an undone one is
   * caught by the re-read, and another process's broadcast of the same bytes is harmless. At most
   * MAX_GAPS_CHASED, and only while the pending nonce moves on (a node that still lacks the nonce just sent,
   * e.g. a path that drops all of this key's transactions, ends the chase).
   */
  async function chaseGaps(address: string, resent: number, sender: ClaimSender | undefined, signerRows: Map<number, MessageRow>): Promise<void> {
    let last = resent;
    for (let i = 0; i < MAX_GAPS_CHASED; i++) {
      const gap = await chain.provider.getTransactionCount(address, 'pending');
      const next = signerRows.get(gap);
      if (gap <= last || !next || senderOf(ctx, next)?.isQueued(next.claim_tx_hash!)) return;
      if (!(await rebroadcastIfUnknown(next, sender, 'lowest_nonce'))) return;
      last = gap;
    }
  }

  /** Successful claims of one tick, recorded together in one statement. */
  async function recordSuccesses(successes: Success[]): Promise<void> {
    const now = new Date();
    const moved = await ctx.repo.transitionMany(successes.map(({ m }) => ({ id: m.id, patch: { claimed_at: now } })), ['PENDING'], 'CLAIMED_SUCCESS');
    const labels = { direction: ctx.direction };
    for (const { m, receipt } of successes) {
      if (!moved.has(String(m.id))) continue;
      if (m.anchored_at) ctx.metrics.claimLatency.observe(labels, Math.max(Date.now() - new Date(m.anchored_at).getTime(), 0) / 1_000);
      ctx.metrics.claimsResolved.inc({ ...labels, status: 'CLAIMED_SUCCESS' });
      if (m.is_sponsored) ctx.metrics.sponsoredWei.inc(labels, Number(receipt.gasUsed * receipt.gasPrice));
    }
  }

  return async function tick(): Promise<boolean> {
    const rows = await ctx.repo.dueChanged(ctx.direction, ['PENDING'], ctx.config.maxFetchMessagesFromDb, UNCHANGED_ROWS_MAX_AGE_MS);
    if (ageChecks.size > 0) {
      const pending = new Set(rows.map((m) => m.claim_tx_hash));
      for (const hash of ageChecks.keys()) if (!pending.has(hash)) ageChecks.delete(hash);
    }
    if (rows.length === 0) {
      for (const s of senders) s.noteIdle();
      return false;
    }
    // Each signer has its own nonce sequence: claims are grouped by the address that sent them.
    const bySigner = new Map<string, MessageRow[]>();
    for (const m of rows) bySigner.set(signerAddress(m), [...(bySigner.get(signerAddress(m)) ?? []), m]);
    for (const s of senders) if (!bySigner.has(s.signer.address)) s.noteIdle();
    // The nonce first, then the head: every transaction the nonce counts is in a block up to that head.
    const groups = await Promise.all([...bySigner].map(async ([address, ms]) => {
      const mined = await chain.provider.getTransactionCount(address, 'latest');
      senders.find((s) => s.signer.address === address)?.noteMined(mined);
      const unmined = ms.map((m) => Number(m.claim_tx_nonce)).filter((n) => n >= mined);
      return { ms, mined, anyMined: ms.length > unmined.length, lowest: unmined.length > 0 ? Math.min(...unmined) : Infinity };
    }));
    const found = groups.some((g) => g.anyMined) ? await blocks.receipts() : new Map<string, Receipt>();
    const successes: Success[] = [];
    const results = await Promise.allSettled(groups.flatMap((g) => {
      const byNonce = new Map(g.ms.map((m) => [Number(m.claim_tx_nonce), m]));
      return g.ms.map((m) => resolve(m, g.mined, Number(m.claim_tx_nonce) > g.lowest, found, successes, byNonce));
    }));
    if (successes.length > 0) await recordSuccesses(successes);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return false;
  };
}
