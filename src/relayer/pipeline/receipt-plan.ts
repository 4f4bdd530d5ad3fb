import type { RelayerConfig } from '../config.js';
import { Status, type MessageStatus } from '../message/status.js';
import { CLEARED_CLAIM, type MessagePatch, type MessageRow } from '../db/rows.js';
import type { FeeEstimate } from './fees.js';
import type { Receipt } from './receipts.js';

/**
 * What the receipt persister decides about one PENDING claim, as pure functions of the row and the facts it gathered
 * (no chain, no database): tested alone in test/relayer/receipt-plan.test.ts. The loop (persister.ts) gathers the facts
 * a decision asks for and applies the decision.
 */

/** A claim the node does not know is sent again from its stored bytes once it is this old (any nonce). */
export const REBROADCAST_AFTER_MS = 10_000;
/**
 * The claim at a signer's lowest unmined nonce holds back every later claim of that signer, so it is checked sooner:
 * once it is this old, and at most once per this period while that nonce stands still. Why a second: the node knows a
 * transaction from the moment it accepts it (whatever the block time), and this process's own broadcasts are skipped
 * while they wait in its queue, so the grace only has to cover a broadcast still on its way from another process (a
 * leader that just stopped) and a node whose pools behind one address sync by gossip, both well under a second. It also
 * matches how long the loops reuse an unchanged read (UNCHANGED_ROWS_MAX_AGE_MS). A false alarm costs one lookup and
 * one resend of the same bytes, which the node answers with "already known"; a lost transaction costs every claim
 * behind it this long.
 */
export const LOST_CLAIM_GRACE_MS = 1_000;

/**
 * A claim at the signer's lowest unmined nonce that the node holds (eth_getTransactionByHash finds it) while its
 * pending nonce stays at that very nonce is replaced (a fee bump at the same nonce) once it is this old, rather than at
 * MESSAGE_SUBMISSION_TIMEOUT. The node reports no executable transaction at that nonce although it has ours: sending
 * the same bytes again is answered "already known" and changes nothing, and every later claim of the signer waits
 * behind it. A node whose pool has it executable counts it in the pending nonce (geth, anvil with or without automine),
 * so an unmined claim that merely waits for a block is never bumped by this rule. Seen on anvil under load: a claim
 * re-sent after a drop stayed known and unmined until the 300 s timeout with 225 claims behind it.
 */
export const STRANDED_CLAIM_MS = 10_000;

export interface ReceiptRules {
  claiming: Pick<
    RelayerConfig['claiming'],
    'maxRetryCycles' | 'maxNumberOfRetries' | 'maxBumpsPerCycle' | 'maxFeePerGasCap' | 'messageSubmissionTimeoutMs'
  >;
  /** L1 / L2: the destination, as reasons name it. */
  destination: string;
}

/** A status transition a plan decides (the claiming loop's or the receipts'): to `to`, with `patch`, for `reason`. */
export type Move = { kind: 'move'; to: MessageStatus; patch: MessagePatch; reason: string };
export function moveTo(to: MessageStatus, patch: MessagePatch, reason: string): Move {
  return { kind: 'move', to, patch, reason };
}

/** Claimed by a transaction not ours: CLAIMED_SUCCESS, whatever became of our claim. */
export const claimedElsewhere = (now: number, reason: string) =>
  moveTo(Status.CLAIMED_SUCCESS, { claimed_at: new Date(now) }, reason);

type Row = Pick<
  MessageRow,
  'claim_tx_hash' | 'claim_tx_nonce' | 'claim_tx_kind' | 'claim_tx_created_at' | 'cycles' | 'retries' | 'bumps'
>;

export interface ReceiptFacts {
  now: number;
  /** The signer's latest (mined) nonce: a claim at or above it cannot have a receipt yet. */
  mined: number;
  /** A lower nonce of the signer is still unmined: this claim waits behind it (it is not bumped). */
  behindLower: boolean;
  /** The claim is still in this process's broadcast queue. */
  queued: boolean;
  /** Why the stored transaction is of another chain than the destination's (foreignChainReason), if it is. */
  foreign: string | undefined;
  /** The claim's receipt: from this tick's blocks, else asked by hash (null: none). */
  receipt?: Receipt | null;
  /** Asked again by hash when the nonce is used and no receipt was found: it may have been mined between reads. */
  receiptAgain?: Receipt | null;
  /** Why a reverted claim reverted (replayed at its block). */
  revertReason?: string;
  /** Whether the destination lists the message as claimed. */
  claimedOnChain?: boolean;
  /** The claim at the signer's lowest nonce was unknown to the node and sent again (its lookup was due). */
  lowestResent?: boolean;
  /**
   * The lowest claim is held by the node while its pending nonce stays at the claim's nonce (STRANDED_CLAIM_MS; its
   * lookup was due).
   */
  stranded?: boolean;
}

/**
 * `need`: gather this fact and plan again; `foreign`: never sent (the reason is reported once); `success`: recorded
 * with the tick's other successes; `move`: a transition from PENDING; `chase`: the lowest claim was sent again, look
 * for the next gap; `replace`: MESSAGE_SUBMISSION_TIMEOUT passed, or the claim is stranded (STRANDED_CLAIM_MS; see
 * planReplacement); `recheck`: look the claim up at the node (age rule); `none`: wait.
 */
export type ReceiptDecision =
  | { kind: 'need'; fact: 'receipt' | 'receiptAgain' | 'revertReason' | 'claimedOnChain' | 'lowestResent' | 'stranded' }
  | { kind: 'foreign'; reason: string }
  | { kind: 'success'; receipt: Receipt }
  | Move
  | { kind: 'replace'; stranded?: true }
  | { kind: 'chase' | 'recheck' | 'none' };

/**
 * A PENDING claim: success → CLAIMED_SUCCESS (with the tick's others); a revert on the L1 rate limit → SENT (the proof
 * is rebuilt), else CLAIMED_SUCCESS when someone else claimed it, else CLAIMED_REVERTED; our nonce used by another
 * transaction → the message is claimed, or claimed again (ANCHORED); a mined cancellation (or a nonce used while
 * cancelling) ends the cycle (planCycleEnd). An unmined claim waits, is looked up at the node, or replaced.
 */
export function planReceipt(m: Row, facts: ReceiptFacts, rules: ReceiptRules): ReceiptDecision {
  if (facts.foreign !== undefined)
    return {
      kind: 'foreign',
      reason: `claim ${m.claim_tx_hash} not sent: ${facts.foreign}; stop the relayer and check the chains (see reset-chain-pin)`,
    };
  const unmined = Number(m.claim_tx_nonce) >= facts.mined;
  if (unmined) return planWaiting(m, facts, rules);
  if (facts.receipt === undefined) return { kind: 'need', fact: 'receipt' };
  const receipt = facts.receipt;
  if (receipt) {
    if (m.claim_tx_kind === 'cancel') return planCycleEnd(m, facts, rules, `cancellation ${m.claim_tx_hash} mined`);
    if (receipt.status === 1) return { kind: 'success', receipt };
    if (facts.revertReason === undefined) return { kind: 'need', fact: 'revertReason' };
    if (facts.revertReason.startsWith('RateLimitExceeded')) {
      const patch = { ...CLEARED_CLAIM, merkle_root: null, leaf_index: null, proof: null };
      return moveTo(Status.SENT, patch, `claim ${m.claim_tx_hash} reverted: L1 rate limit; retried later`);
    }
    if (facts.claimedOnChain === undefined) return { kind: 'need', fact: 'claimedOnChain' };
    if (facts.claimedOnChain)
      return claimedElsewhere(facts.now, `claimed by another transaction; our claim ${m.claim_tx_hash} reverted`);
    const reverted = `claim ${m.claim_tx_hash} reverted: ${facts.revertReason}`;
    return moveTo(Status.CLAIMED_REVERTED, { claimed_at: new Date(facts.now) }, reverted);
  }
  // Our nonce is used and our transaction has no receipt: it was replaced (or the gap filled). Look again first: it may
  // have been mined between the two reads.
  if (facts.receiptAgain === undefined) return { kind: 'need', fact: 'receiptAgain' };
  if (facts.receiptAgain) return { kind: 'none' };
  if (m.claim_tx_kind === 'cancel')
    return planCycleEnd(m, facts, rules, `nonce ${m.claim_tx_nonce} used by an earlier version of the claim`);
  if (facts.claimedOnChain === undefined) return { kind: 'need', fact: 'claimedOnChain' };
  if (facts.claimedOnChain) return claimedElsewhere(facts.now, 'claimed by another transaction');
  return moveTo(Status.ANCHORED, CLEARED_CLAIM, `claim transaction ${m.claim_tx_hash} was replaced; claiming again`);
}

/**
 * An unmined claim. The one holding back its signer's later nonces is looked up first, before any fee bump: when the
 * node never got it, its stored bytes are all it needs (a bump pays more for the same, and a receipt iteration slower
 * than the grace, under load, would otherwise reach MESSAGE_SUBMISSION_TIMEOUT first). Only what this process is not
 * about to broadcast anyway is sent again or replaced.
 */
function planWaiting(m: Row, facts: ReceiptFacts, rules: ReceiptRules): ReceiptDecision {
  const age = m.claim_tx_created_at ? facts.now - new Date(m.claim_tx_created_at).getTime() : 0;
  const lowest = Number(m.claim_tx_nonce) === facts.mined;
  if (lowest && !facts.queued && age > LOST_CLAIM_GRACE_MS) {
    if (facts.lowestResent === undefined) return { kind: 'need', fact: 'lowestResent' };
    if (facts.lowestResent) return { kind: 'chase' };
  }
  if (age > rules.claiming.messageSubmissionTimeoutMs && !facts.behindLower && !facts.queued)
    return { kind: 'replace' };
  if (lowest && !facts.queued && age > STRANDED_CLAIM_MS && facts.lowestResent === false) {
    if (facts.stranded === undefined) return { kind: 'need', fact: 'stranded' };
    if (facts.stranded) return { kind: 'replace', stranded: true };
  }
  if (!facts.queued && !lowest && age > REBROADCAST_AFTER_MS) return { kind: 'recheck' };
  return { kind: 'none' };
}

/**
 * The end of a submission cycle (our cancellation, or an older version of the claim, used the nonce): claimed by anyone
 * → CLAIMED_SUCCESS; else a new cycle (ANCHORED), or NEEDS_MANUAL_INTERVENTION after MAX_RETRY_CYCLES cycles or
 * MAX_NUMBER_OF_RETRIES submissions.
 */
export function planCycleEnd(
  m: Row,
  facts: Pick<ReceiptFacts, 'now' | 'claimedOnChain'>,
  rules: ReceiptRules,
  what: string,
): ReceiptDecision {
  if (facts.claimedOnChain === undefined) return { kind: 'need', fact: 'claimedOnChain' };
  if (facts.claimedOnChain) return claimedElsewhere(facts.now, `claimed by another transaction; ${what}`);
  const c = rules.claiming;
  const cycles = m.cycles + 1;
  const reset = { ...CLEARED_CLAIM, cycles, bumps: 0, claim_tx_kind: 'claim' as const };
  if (cycles >= c.maxRetryCycles || m.retries >= c.maxNumberOfRetries) {
    const limit =
      cycles >= c.maxRetryCycles
        ? `MAX_RETRY_CYCLES (${c.maxRetryCycles})`
        : `MAX_NUMBER_OF_RETRIES (${c.maxNumberOfRetries})`;
    const reason = `${what}; ${cycles} submission cycle(s) and ${m.retries} submission(s) without a receipt: ${limit} reached`;
    return moveTo(Status.NEEDS_MANUAL_INTERVENTION, reset, reason);
  }
  return moveTo(
    Status.ANCHORED,
    reset,
    `${what}; submission cycle ${cycles} of ${c.maxRetryCycles} ended, claiming again`,
  );
}

/** ⌈x × 1.1⌉ (at least x + 1): the smallest fee a node accepts for a replacement at the same nonce. */
export const bumped = (x: bigint) => {
  const up = (x * 11n + 9n) / 10n;
  return up > x ? up : x + 1n;
};
const max = (a: bigint, b: bigint) => (a > b ? a : b);

export type Replacement =
  | { kind: 'need'; fact: 'fees' }
  | { kind: 'wait'; reason: string }
  | { kind: 'bump' | 'cancel'; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint; reason: string };

/**
 * MESSAGE_SUBMISSION_TIMEOUT passed without a receipt (or the claim is `stranded`: STRANDED_CLAIM_MS): re-send at the
 * same nonce with fees raised by at least 10 % and at least today's (a fee bump, MAX_BUMPS_PER_CYCLE per cycle while
 * MAX_NUMBER_OF_RETRIES allows), else cancel with a zero-value transaction to ourselves. Waits when the fees would pass
 * MAX_FEE_PER_GAS_CAP, or when the key that signed it is no longer configured (`signerKnown`: only that key can replace
 * its nonce). `old`: the stored transaction's fees; `fresh`: today's (asked for once the signer is known); `reason`:
 * what the replacement is recorded with.
 */
export function planReplacement(
  m: Row & Pick<MessageRow, 'claim_signer'>,
  old: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
  fresh: FeeEstimate | undefined,
  signerKnown: boolean,
  rules: ReceiptRules,
  stranded = false,
): Replacement {
  const c = rules.claiming;
  const timeout = stranded
    ? `the node holds the claim but its pending nonce stays at ${m.claim_tx_nonce} (it would not execute it) after ${STRANDED_CLAIM_MS} ms`
    : `no receipt after MESSAGE_SUBMISSION_TIMEOUT (${c.messageSubmissionTimeoutMs} ms)`;
  if (!signerKnown) {
    return {
      kind: 'wait',
      reason: `${timeout}; signed by ${m.claim_signer}, which is no longer among the ${rules.destination} signer keys: add it back (${rules.destination}_SIGNER_PRIVATE_KEYS) to bump or cancel it`,
    };
  }
  if (!fresh) return { kind: 'need', fact: 'fees' };
  const bump = m.claim_tx_kind !== 'cancel' && m.bumps < c.maxBumpsPerCycle && m.retries < c.maxNumberOfRetries;
  const minFee = bumped(old.maxFeePerGas);
  const maxFeePerGas = max(minFee, fresh.maxFeePerGas);
  const maxPriorityFeePerGas = max(bumped(old.maxPriorityFeePerGas), fresh.maxPriorityFeePerGas);
  const what = bump ? 'fee bump' : 'cancellation';
  if (maxFeePerGas > c.maxFeePerGasCap || maxPriorityFeePerGas > maxFeePerGas) {
    return {
      kind: 'wait',
      reason: `${timeout}; a ${what} needs max fee ${minFee} wei, above MAX_FEE_PER_GAS_CAP ${c.maxFeePerGasCap}: waiting`,
    };
  }
  const nonce = Number(m.claim_tx_nonce);
  const reason = bump
    ? `${timeout}: fee bump ${m.bumps + 1} of ${c.maxBumpsPerCycle} in cycle ${m.cycles + 1}, nonce ${nonce}`
    : `${timeout}: cycle ${m.cycles + 1} cancelled at nonce ${nonce}`;
  return { kind: bump ? 'bump' : 'cancel', maxFeePerGas, maxPriorityFeePerGas, reason };
}
