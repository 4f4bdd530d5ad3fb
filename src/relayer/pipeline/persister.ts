import { Status } from '../message/status.js';
import { Transaction } from 'ethers';
import { describeRevert, type Chain } from '../chain.js';
import type { MessageRow } from '../db/rows.js';
import { duePage, senderOf, sendersOf, type DirectionContext } from './context.js';
import type { ClaimSender } from '../claim/sender.js';
import { isClaimedOnChain } from '../claim/facts.js';
import { createBlockReceipts, type Receipt } from './receipts.js';
import {
  LOST_CLAIM_GRACE_MS,
  REBROADCAST_AFTER_MS,
  planReceipt,
  type ReceiptDecision,
  type ReceiptFacts,
  type ReceiptRules,
} from './receipt-plan.js';
import { replaceClaim } from './replacement.js';
import { foreignChainReason } from '../tx-chain-id.js';

/**
 * A claim past REBROADCAST_AFTER_MS (not at its signer's lowest nonce) is looked up at most this often: every receipt
 * iteration (a few per second) asked the node about every such claim, 0.7 lookups per claim in the bench's drop phase,
 * while the claim that matters most, at the lowest nonce, has its own faster path.
 */
const AGE_RECHECK_MS = 2_000;
/** Further lost claims of a signer sent again in one iteration after its lowest one (see chaseGaps). */
const MAX_GAPS_CHASED = 16;

interface Success {
  m: MessageRow;
  receipt: Receipt;
}

/** One signer's PENDING claims in a tick: its mined nonce, its lowest unmined claim's nonce, its claims by nonce. */
interface SignerClaims {
  mined: number;
  lowest: number;
  byNonce: Map<number, MessageRow>;
}

/** What a tick gathers across its claims: the receipts read from its blocks, and its successes (recorded together). */
interface Tick {
  found: Map<string, Receipt>;
  successes: Success[];
}

/**
 * When each key was last looked up at the node: at most once per `periodMs` while its nonce stands still. Keyed by
 * signer address with its lowest unmined nonce, a new lowest nonce may be looked up at once: it only comes after the
 * chain mined the one before, so the lookups stay bounded by the chain's progress. Keyed by claim hash, the nonce is 0.
 */
function createLookupChecks(periodMs: number) {
  const last = new Map<string, { nonce: number; at: number }>();
  return {
    /** Whether `key` (at `nonce`) may be looked up now; if so, the lookup is recorded. */
    due(key: string, nonce = 0): boolean {
      const prev = last.get(key);
      if (prev && prev.nonce === nonce && Date.now() - prev.at < periodMs) return false;
      last.set(key, { nonce, at: Date.now() });
      return true;
    },
    /** Forgets every key but those of `keep`. */
    keepOnly(keep: ReadonlySet<string | null>): void {
      for (const key of last.keys()) if (!keep.has(key)) last.delete(key);
    },
  };
}

/**
 * Resolves PENDING claims from their receipts: success → CLAIMED_SUCCESS; a revert is replayed at its block to learn
 * why (the L1 rate limit sends the message back to SENT, a claim lost to another claimer is CLAIMED_SUCCESS, anything
 * else CLAIMED_REVERTED). A transaction the node does not know is rebroadcast from the stored raw bytes: at once (after
 * LOST_CLAIM_GRACE_MS) at the signer's lowest unmined nonce, which holds back all of its later claims, else after
 * REBROADCAST_AFTER_MS. One whose nonce was used by another transaction returns the message for a new attempt. The
 * decisions are planReceipt's and planReplacement's (receipt-plan.ts); this loop gathers the facts they ask for and
 * applies them.
 */
export function createReceiptPersister(ctx: DirectionContext) {
  const persister = new ReceiptPersister(ctx);
  return () => persister.tick();
}

class ReceiptPersister {
  private readonly chain: Chain;
  private readonly senders: ClaimSender[];
  private readonly blocks: ReturnType<typeof createBlockReceipts>;
  private readonly rules: ReceiptRules;
  private readonly lowestChecks = createLookupChecks(LOST_CLAIM_GRACE_MS);
  /** The same bound for the stranded check (STRANDED_CLAIM_MS): its two lookups at most once per grace per signer. */
  private readonly strandedChecks = createLookupChecks(LOST_CLAIM_GRACE_MS);
  /** Claims already reported as signed for another chain: one error line each, not one per iteration. */
  private readonly foreignReported = new Set<string>();
  /** When each claim (by hash) past REBROADCAST_AFTER_MS was last looked up; only claims still PENDING are kept. */
  private readonly ageChecks = createLookupChecks(AGE_RECHECK_MS);

  constructor(private readonly ctx: DirectionContext) {
    this.chain = ctx.destination;
    this.senders = sendersOf(ctx);
    const addresses = this.senders.map((s) => s.signer.address);
    this.blocks = createBlockReceipts(this.chain, addresses, ctx.logger);
    this.rules = { claiming: ctx.config.claiming, destination: ctx.destination.name };
  }

  private async receiptByHash(hash: string): Promise<Receipt | null> {
    const r = await this.chain.provider.getTransactionReceipt(hash);
    return (
      r && {
        hash: r.hash.toLowerCase(),
        status: r.status ?? 0,
        blockNumber: r.blockNumber,
        gasUsed: r.gasUsed,
        gasPrice: r.gasPrice,
      }
    );
  }

  /** The address that sent a row's claim (rows from before claim_signer: the primary signer). */
  private signerAddress(m: MessageRow): string {
    return m.claim_signer ?? this.ctx.sender.signer.address;
  }

  private async revertReason(m: MessageRow, receipt: Receipt): Promise<string> {
    const tx = Transaction.from(m.claim_tx_raw!);
    try {
      await this.chain.provider.call({
        from: this.signerAddress(m),
        to: tx.to,
        data: tx.data,
        gasLimit: tx.gasLimit,
        blockTag: receipt.blockNumber,
      });
      return 'reverted (the replay at its block succeeds; out of gas or state changed within the block)';
    } catch (err) {
      return describeRevert(this.chain.iface, err);
    }
  }

  /**
   * One PENDING claim: planReceipt with the facts it asks for, then its decision applied. `g.mined`: the signer's
   * latest nonce, read once per tick (a claim whose nonce is not below it cannot have a receipt yet, so it costs no
   * receipt request). Behind `g.lowest`, a lower nonce of ours is still unmined, so this claim is not bumped (replacing
   * the lowest one is what unblocks the queue, and bumping every claim behind a lost transaction would multiply fees
   * for nothing).
   */
  private async resolve(m: MessageRow, g: SignerClaims, t: Tick): Promise<void> {
    const sender = senderOf(this.ctx, m);
    const facts: ReceiptFacts = {
      now: Date.now(),
      mined: g.mined,
      behindLower: Number(m.claim_tx_nonce) > g.lowest,
      queued: sender?.isQueued(m.claim_tx_hash!) ?? false,
      foreign: m.claim_tx_raw ? foreignChainReason(m.claim_tx_raw, this.chain.chainId) : undefined,
    };
    // planReceipt asks for at most three facts in a row (receipt, revert reason, claimed): a few rounds at most.
    for (let round = 0; round < 5; round++) {
      const d = planReceipt(m, facts, this.rules);
      if (d.kind !== 'need') return this.apply(m, d, sender, g, t);
      await this.gather(m, d.fact, facts, t.found, sender);
      facts.now = Date.now();
    }
    throw new Error(`planReceipt of claim ${m.claim_tx_hash} kept asking for facts`);
  }

  /** Gathers one fact planReceipt asked for. */
  private async gather(
    m: MessageRow,
    fact: Extract<ReceiptDecision, { kind: 'need' }>['fact'],
    facts: ReceiptFacts,
    found: Map<string, Receipt>,
    sender: ClaimSender | undefined,
  ): Promise<void> {
    const hash = m.claim_tx_hash!;
    // Receipts come from the blocks read this tick; one not among them (mined before this process read blocks, or
    // replaced) is asked for by hash.
    if (fact === 'receipt') facts.receipt = found.get(hash) ?? (await this.receiptByHash(hash));
    else if (fact === 'receiptAgain') facts.receiptAgain = await this.receiptByHash(hash);
    else if (fact === 'revertReason') facts.revertReason = await this.revertReason(m, facts.receipt!);
    else if (fact === 'claimedOnChain') facts.claimedOnChain = await isClaimedOnChain(this.ctx, m);
    else if (fact === 'lowestResent')
      facts.lowestResent =
        this.lowestChecks.due(this.signerAddress(m), facts.mined) &&
        (await this.rebroadcastIfUnknown(m, sender, 'lowest_nonce'));
    else facts.stranded = this.strandedChecks.due(this.signerAddress(m), facts.mined) && (await this.isStranded(m));
  }

  /** Whether the node holds the claim while its pending nonce stays at the claim's nonce (STRANDED_CLAIM_MS). */
  private async isStranded(m: MessageRow): Promise<boolean> {
    if (!(await this.chain.provider.getTransaction(m.claim_tx_hash!))) return false;
    return (
      (await this.chain.provider.getTransactionCount(this.signerAddress(m), 'pending')) === Number(m.claim_tx_nonce)
    );
  }

  private async apply(
    m: MessageRow,
    d: Exclude<ReceiptDecision, { kind: 'need' }>,
    sender: ClaimSender | undefined,
    g: SignerClaims,
    t: Tick,
  ): Promise<void> {
    if (d.kind === 'foreign') await this.reportForeign(m, d.reason);
    else if (d.kind === 'success') t.successes.push({ m, receipt: d.receipt });
    else if (d.kind === 'move') await this.move(m, d);
    else if (d.kind === 'chase') await this.chaseGaps(this.signerAddress(m), g, sender);
    else if (d.kind === 'replace') await replaceClaim(this.ctx, this.rules, m, sender, d.stranded === true);
    else if (d.kind === 'recheck' && this.ageChecks.due(m.claim_tx_hash!))
      await this.rebroadcastIfUnknown(m, sender, 'age');
  }

  /**
   * A PENDING claim whose stored transaction was signed for another chain than the destination's (the chain pin stops a
   * whole database of other chains at start; this is the guard per row): no receipt, no rebroadcast, no bump or
   * cancellation (those would sign its calldata anew for this chain). Logged once, reason recorded.
   */
  private async reportForeign(m: MessageRow, reason: string): Promise<void> {
    if (this.foreignReported.has(m.claim_tx_hash!)) return;
    this.foreignReported.add(m.claim_tx_hash!);
    this.ctx.logger.error({ message: m.message_hash, tx: m.claim_tx_hash, direction: this.ctx.direction }, reason);
    if (m.failure_reason !== reason) await this.ctx.repo.annotate(m.id, Status.PENDING, { failure_reason: reason });
  }

  /** A transition from PENDING, counted in relayer_claims_resolved_total where it resolves the claim. */
  private async move(m: MessageRow, d: Extract<ReceiptDecision, { kind: 'move' }>): Promise<void> {
    const moved = await this.ctx.repo.transition(m.id, [Status.PENDING], d.to, d.patch, d.reason);
    const labels = { direction: this.ctx.direction };
    if (d.to === Status.CLAIMED_REVERTED)
      this.ctx.metrics.claimsResolved.inc({ ...labels, status: Status.CLAIMED_REVERTED });
    if (moved && d.to === Status.NEEDS_MANUAL_INTERVENTION) {
      this.ctx.metrics.claimsResolved.inc({ ...labels, status: Status.NEEDS_MANUAL_INTERVENTION });
      this.ctx.logger.error(
        { message: m.message_hash, direction: this.ctx.direction, cycles: d.patch.cycles, retries: m.retries },
        `message ${m.message_hash} needs manual intervention: ${d.reason}`,
      );
    }
  }

  /**
   * Sends a claim the node does not know (eth_getTransactionByHash) again from its stored signed bytes: same nonce,
   * same fees, same hash, so nothing is recorded and no submission is counted. Any signer's broadcast will do, the
   * transaction being signed already; another relayer process sending the same bytes is harmless. The row is read again
   * first: this tick's rows may predate a broadcast of ours that failed and was undone (message returned, nonce given
   * back and perhaps leased again), and the undo is committed before the claim leaves the broadcast queue, so a claim
   * seen unqueued and still PENDING with this hash was not undone. Resolves true when it was sent again (or the row
   * moved on meanwhile): nothing more to do with it this time.
   */
  private async rebroadcastIfUnknown(
    m: MessageRow,
    sender: ClaimSender | undefined,
    trigger: 'lowest_nonce' | 'age',
  ): Promise<boolean> {
    if (!m.claim_tx_raw || (await this.chain.provider.getTransaction(m.claim_tx_hash!))) return false;
    if (!(await this.ctx.repo.isPendingWith(String(m.id), m.claim_tx_hash!))) return true;
    const detail =
      trigger === 'lowest_nonce'
        ? `it holds back the later nonces of ${this.signerAddress(m)}`
        : `no receipt after ${REBROADCAST_AFTER_MS} ms`;
    this.ctx.logger.warn(
      {
        message: m.message_hash,
        tx: m.claim_tx_hash,
        nonce: Number(m.claim_tx_nonce),
        signer: this.signerAddress(m),
        trigger,
      },
      `claim transaction unknown to the node (${detail}); rebroadcasting`,
    );
    await (sender ?? this.ctx.sender).broadcast(m.claim_tx_raw);
    this.ctx.metrics.rebroadcasts.inc({ direction: this.ctx.direction, trigger });
    return true;
  }

  /**
   * After the lowest claim of a signer was sent again, the next claim the node lacks is often a few nonces on (claims
   * are signed in batches, and a batch can lose several): the node's pending nonce names it, being the first nonce its
   * pool is missing. Each is sent again in this iteration rather than one per iteration (an iteration under load takes
   * seconds, and the rest waited for the 10 s rule). No grace here: the node has just shown that it lacks that nonce, a
   * claim still in our broadcast queue is skipped, an undone one is caught by the re-read, and another process's
   * broadcast of the same bytes is harmless. At most MAX_GAPS_CHASED, and only while the pending nonce moves on (a node
   * that still lacks the nonce just sent, e.g. a path that drops all of this key's transactions, ends the chase).
   */
  private async chaseGaps(address: string, g: SignerClaims, sender: ClaimSender | undefined): Promise<void> {
    let last = g.mined;
    for (let i = 0; i < MAX_GAPS_CHASED; i++) {
      const gap = await this.chain.provider.getTransactionCount(address, 'pending');
      const next = g.byNonce.get(gap);
      if (gap <= last || !next || senderOf(this.ctx, next)?.isQueued(next.claim_tx_hash!)) return;
      if (!(await this.rebroadcastIfUnknown(next, sender, 'lowest_nonce'))) return;
      last = gap;
    }
  }

  /** Successful claims of one tick, recorded together in one statement. */
  private async recordSuccesses(successes: Success[]): Promise<void> {
    const now = new Date();
    const moved = await this.ctx.repo.transitionMany(
      successes.map(({ m }) => ({ id: m.id, patch: { claimed_at: now } })),
      [Status.PENDING],
      Status.CLAIMED_SUCCESS,
    );
    const labels = { direction: this.ctx.direction };
    for (const { m, receipt } of successes) {
      if (!moved.has(String(m.id))) continue;
      if (m.anchored_at)
        this.ctx.metrics.claimLatency.observe(
          labels,
          Math.max(Date.now() - new Date(m.anchored_at).getTime(), 0) / 1_000,
        );
      this.ctx.metrics.claimsResolved.inc({ ...labels, status: Status.CLAIMED_SUCCESS });
      if (m.is_sponsored) this.ctx.metrics.sponsoredWei.inc(labels, Number(receipt.gasUsed * receipt.gasPrice));
    }
  }

  async tick(): Promise<boolean> {
    const rows = await duePage(this.ctx, [Status.PENDING]);
    this.ageChecks.keepOnly(new Set(rows.map((m) => m.claim_tx_hash)));
    if (rows.length === 0) {
      for (const s of this.senders) s.noteIdle();
      return false;
    }
    // Each signer has its own nonce sequence: claims are grouped by the address that sent them.
    const bySigner = new Map<string, MessageRow[]>();
    for (const m of rows) bySigner.set(this.signerAddress(m), [...(bySigner.get(this.signerAddress(m)) ?? []), m]);
    for (const s of this.senders) if (!bySigner.has(s.signer.address)) s.noteIdle();
    // The nonce first, then the head: every transaction the nonce counts is in a block up to that head.
    const groups = await Promise.all(
      [...bySigner].map(async ([address, ms]) => {
        const mined = await this.chain.provider.getTransactionCount(address, 'latest');
        this.senders.find((s) => s.signer.address === address)?.noteMined(mined);
        const unmined = ms.map((m) => Number(m.claim_tx_nonce)).filter((n) => n >= mined);
        return {
          ms,
          mined,
          anyMined: ms.length > unmined.length,
          lowest: unmined.length > 0 ? Math.min(...unmined) : Infinity,
          byNonce: new Map(ms.map((m) => [Number(m.claim_tx_nonce), m])),
        };
      }),
    );
    const found = groups.some((g) => g.anyMined) ? await this.blocks.receipts() : new Map<string, Receipt>();
    const t: Tick = { found, successes: [] };
    const results = await Promise.allSettled(groups.flatMap((g) => g.ms.map((m) => this.resolve(m, g, t))));
    if (t.successes.length > 0) await this.recordSuccesses(t.successes);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return false;
  }
}
