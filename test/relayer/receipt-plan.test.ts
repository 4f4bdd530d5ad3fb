import { describe, expect, it } from 'vitest';
import { CLEARED_CLAIM } from '../../src/relayer/db/rows.js';
import {
  LOST_CLAIM_GRACE_MS,
  REBROADCAST_AFTER_MS,
  STRANDED_CLAIM_MS,
  bumped,
  planCycleEnd,
  planReceipt,
  planReplacement,
  type ReceiptFacts,
  type ReceiptRules,
} from '../../src/relayer/pipeline/receipt-plan.js';

/**
 * The receipt persister's decisions alone (src/relayer/pipeline/receipt-plan.ts): no chain, no database. The
 * loop that gathers these facts and applies these decisions is covered on anvil (lifecycle, lost-claim,
 * rate-limit, foreign-claim, multi-key tests).
 */
const gwei = (n: number) => BigInt(Math.round(n * 1e9));
const NOW = Date.UTC(2026, 10, 26, 7, 0, 0);
const HASH = `0x${'ab'.repeat(32)}`;
const rules: ReceiptRules = {
  claiming: {
    maxRetryCycles: 3,
    maxNumberOfRetries: 10,
    maxBumpsPerCycle: 2,
    maxFeePerGasCap: gwei(100),
    messageSubmissionTimeoutMs: 30_000,
  },
  destination: 'L2',
};
const row = (
  over: Partial<{
    nonce: number;
    kind: 'claim' | 'cancel';
    ageMs: number;
    cycles: number;
    retries: number;
    bumps: number;
    signer: string | null;
  }> = {},
) => ({
  claim_tx_hash: HASH,
  claim_tx_nonce: String(over.nonce ?? 5),
  claim_tx_kind: over.kind ?? ('claim' as const),
  claim_tx_created_at: new Date(NOW - (over.ageMs ?? 0)),
  cycles: over.cycles ?? 0,
  retries: over.retries ?? 1,
  bumps: over.bumps ?? 0,
  claim_signer: over.signer ?? null,
});
/** A claim whose nonce the chain has used (mined 6 > nonce 5), unless `mined` says otherwise. */
const facts = (more: Partial<ReceiptFacts> = {}): ReceiptFacts => ({
  now: NOW,
  mined: 6,
  behindLower: false,
  queued: false,
  foreign: undefined,
  ...more,
});
const receipt = (status: number) => ({ hash: HASH, status, blockNumber: 9, gasUsed: 50_000n, gasPrice: gwei(1) });

describe('planReceipt', () => {
  it('behavior: a claim signed for another chain is never looked at further, whatever else is known', () => {
    expect(
      planReceipt(
        row(),
        facts({ foreign: 'it was signed for chain id 1, the destination is chain id 2', receipt: receipt(1) }),
        rules,
      ),
    ).toEqual({
      kind: 'foreign',
      reason: `claim ${HASH} not sent: it was signed for chain id 1, the destination is chain id 2; stop the relayer and check the chains (see reset-chain-pin)`,
    });
  });

  it('behavior: a mined nonce asks for the receipt; success is recorded with the tick, a revert asks why and (unless the L1 rate limit) whether someone else claimed it', () => {
    expect(planReceipt(row(), facts(), rules)).toEqual({ kind: 'need', fact: 'receipt' });
    expect(planReceipt(row(), facts({ receipt: receipt(1) }), rules)).toEqual({ kind: 'success', receipt: receipt(1) });
    expect(planReceipt(row(), facts({ receipt: receipt(0) }), rules)).toEqual({ kind: 'need', fact: 'revertReason' });
    expect(planReceipt(row(), facts({ receipt: receipt(0), revertReason: 'RateLimitExceeded()' }), rules)).toEqual({
      kind: 'move',
      to: 'SENT',
      patch: { ...CLEARED_CLAIM, merkle_root: null, leaf_index: null, proof: null },
      reason: `claim ${HASH} reverted: L1 rate limit; retried later`,
    });
    expect(planReceipt(row(), facts({ receipt: receipt(0), revertReason: 'Paused()' }), rules)).toEqual({
      kind: 'need',
      fact: 'claimedOnChain',
    });
    expect(
      planReceipt(row(), facts({ receipt: receipt(0), revertReason: 'Paused()', claimedOnChain: true }), rules),
    ).toMatchObject({ to: 'CLAIMED_SUCCESS', reason: `claimed by another transaction; our claim ${HASH} reverted` });
    expect(
      planReceipt(row(), facts({ receipt: receipt(0), revertReason: 'Paused()', claimedOnChain: false }), rules),
    ).toEqual({
      kind: 'move',
      to: 'CLAIMED_REVERTED',
      patch: { claimed_at: new Date(NOW) },
      reason: `claim ${HASH} reverted: Paused()`,
    });
  });

  it('behavior: a used nonce without our receipt is looked up once more, then claimed by someone else, or claimed again (ANCHORED)', () => {
    expect(planReceipt(row(), facts({ receipt: null }), rules)).toEqual({ kind: 'need', fact: 'receiptAgain' });
    expect(planReceipt(row(), facts({ receipt: null, receiptAgain: receipt(1) }), rules)).toEqual({ kind: 'none' });
    expect(planReceipt(row(), facts({ receipt: null, receiptAgain: null }), rules)).toEqual({
      kind: 'need',
      fact: 'claimedOnChain',
    });
    expect(planReceipt(row(), facts({ receipt: null, receiptAgain: null, claimedOnChain: true }), rules)).toMatchObject(
      { to: 'CLAIMED_SUCCESS', reason: 'claimed by another transaction' },
    );
    expect(planReceipt(row(), facts({ receipt: null, receiptAgain: null, claimedOnChain: false }), rules)).toEqual({
      kind: 'move',
      to: 'ANCHORED',
      patch: CLEARED_CLAIM,
      reason: `claim transaction ${HASH} was replaced; claiming again`,
    });
  });

  it('behavior: a mined cancellation, or a nonce used while cancelling, ends the cycle', () => {
    expect(
      planReceipt(row({ kind: 'cancel' }), facts({ receipt: receipt(1), claimedOnChain: false }), rules),
    ).toMatchObject({
      to: 'ANCHORED',
      reason: `cancellation ${HASH} mined; submission cycle 1 of 3 ended, claiming again`,
    });
    expect(
      planReceipt(row({ kind: 'cancel' }), facts({ receipt: null, receiptAgain: null, claimedOnChain: false }), rules),
    ).toMatchObject({
      to: 'ANCHORED',
      reason: 'nonce 5 used by an earlier version of the claim; submission cycle 1 of 3 ended, claiming again',
    });
  });

  it('behavior: an unmined claim: the lowest nonce is looked up after the grace (and its gaps chased once resent), a timed-out one replaced, an old one rechecked; queued ones are left alone', () => {
    const unmined = (ageMs: number, more: Partial<ReceiptFacts> = {}, nonce = 5) =>
      planReceipt(row({ ageMs, nonce }), facts({ mined: 5, ...more }), rules);
    expect(unmined(LOST_CLAIM_GRACE_MS)).toEqual({ kind: 'none' });
    expect(unmined(LOST_CLAIM_GRACE_MS + 1)).toEqual({ kind: 'need', fact: 'lowestResent' });
    expect(unmined(LOST_CLAIM_GRACE_MS + 1, { lowestResent: true })).toEqual({ kind: 'chase' });
    expect(unmined(LOST_CLAIM_GRACE_MS + 1, { lowestResent: false })).toEqual({ kind: 'none' });
    expect(unmined(30_001, { lowestResent: false })).toEqual({ kind: 'replace' });
    // Held by the node but not executable there (its pending nonce stays at the claim's): replaced early, once
    // STRANDED_CLAIM_MS old, and only the lowest claim, only when it was not just sent again.
    expect(unmined(STRANDED_CLAIM_MS, { lowestResent: false })).toEqual({ kind: 'none' });
    expect(unmined(STRANDED_CLAIM_MS + 1, { lowestResent: false })).toEqual({ kind: 'need', fact: 'stranded' });
    expect(unmined(STRANDED_CLAIM_MS + 1, { lowestResent: false, stranded: false })).toEqual({ kind: 'none' });
    expect(unmined(STRANDED_CLAIM_MS + 1, { lowestResent: false, stranded: true })).toEqual({
      kind: 'replace',
      stranded: true,
    });
    expect(unmined(STRANDED_CLAIM_MS + 1, { lowestResent: true })).toEqual({ kind: 'chase' });
    expect(unmined(STRANDED_CLAIM_MS + 1, { behindLower: true }, 7)).toEqual({ kind: 'recheck' });
    expect(unmined(30_001, { queued: true })).toEqual({ kind: 'none' });
    // Behind a lower unmined nonce: never bumped, only looked up once old.
    expect(unmined(30_001, { behindLower: true }, 7)).toEqual({ kind: 'recheck' });
    expect(unmined(REBROADCAST_AFTER_MS, { behindLower: true }, 7)).toEqual({ kind: 'none' });
  });
});

describe('planCycleEnd', () => {
  it('behavior: claimed by anyone is success; MAX_RETRY_CYCLES cycles or MAX_NUMBER_OF_RETRIES submissions need an operator', () => {
    expect(planCycleEnd(row(), { now: NOW }, rules, 'x')).toEqual({ kind: 'need', fact: 'claimedOnChain' });
    expect(planCycleEnd(row(), { now: NOW, claimedOnChain: true }, rules, 'x')).toEqual({
      kind: 'move',
      to: 'CLAIMED_SUCCESS',
      patch: { claimed_at: new Date(NOW) },
      reason: 'claimed by another transaction; x',
    });
    const reset = (cycles: number) => ({ ...CLEARED_CLAIM, cycles, bumps: 0, claim_tx_kind: 'claim' });
    expect(planCycleEnd(row({ cycles: 2 }), { now: NOW, claimedOnChain: false }, rules, 'x')).toEqual({
      kind: 'move',
      to: 'NEEDS_MANUAL_INTERVENTION',
      patch: reset(3),
      reason: 'x; 3 submission cycle(s) and 1 submission(s) without a receipt: MAX_RETRY_CYCLES (3) reached',
    });
    expect(planCycleEnd(row({ retries: 10 }), { now: NOW, claimedOnChain: false }, rules, 'x')).toMatchObject({
      to: 'NEEDS_MANUAL_INTERVENTION',
      reason: 'x; 1 submission cycle(s) and 10 submission(s) without a receipt: MAX_NUMBER_OF_RETRIES (10) reached',
    });
  });
});

describe('planReplacement', () => {
  const old = { maxFeePerGas: gwei(10), maxPriorityFeePerGas: gwei(1) };
  const fresh = { maxFeePerGas: gwei(5), maxPriorityFeePerGas: gwei(2), uncappedMaxFeePerGas: gwei(5) };

  it("behavior: a fee bump at ≥ 10 % more (or today's fees), MAX_BUMPS_PER_CYCLE per cycle, then a cancellation; today's fees asked for only once the signer is known", () => {
    expect(planReplacement(row(), old, undefined, true, rules)).toEqual({ kind: 'need', fact: 'fees' });
    expect(planReplacement(row(), old, fresh, true, rules)).toEqual({
      kind: 'bump',
      maxFeePerGas: gwei(11),
      maxPriorityFeePerGas: gwei(2),
      reason: 'no receipt after MESSAGE_SUBMISSION_TIMEOUT (30000 ms): fee bump 1 of 2 in cycle 1, nonce 5',
    });
    expect(planReplacement(row({ bumps: 2 }), old, fresh, true, rules)).toMatchObject({
      kind: 'cancel',
      reason: 'no receipt after MESSAGE_SUBMISSION_TIMEOUT (30000 ms): cycle 1 cancelled at nonce 5',
    });
    expect(planReplacement(row({ kind: 'cancel' }), old, fresh, true, rules)).toMatchObject({ kind: 'cancel' });
    expect(planReplacement(row(), old, fresh, true, rules, true)).toMatchObject({
      kind: 'bump',
      reason: `the node holds the claim but its pending nonce stays at 5 (it would not execute it) after ${STRANDED_CLAIM_MS} ms: fee bump 1 of 2 in cycle 1, nonce 5`,
    });
    expect(bumped(0n)).toBe(1n);
    expect(bumped(10n)).toBe(11n);
    expect(bumped(11n)).toBe(13n);
  });

  it('behavior: waits above MAX_FEE_PER_GAS_CAP, and when the key that signed it is no longer configured', () => {
    expect(
      planReplacement(row(), { maxFeePerGas: gwei(95), maxPriorityFeePerGas: gwei(1) }, fresh, true, rules),
    ).toEqual({
      kind: 'wait',
      reason: `no receipt after MESSAGE_SUBMISSION_TIMEOUT (30000 ms); a fee bump needs max fee ${gwei(104.5)} wei, above MAX_FEE_PER_GAS_CAP ${gwei(100)}: waiting`,
    });
    expect(planReplacement(row({ signer: '0x1234' }), old, undefined, false, rules)).toEqual({
      kind: 'wait',
      reason:
        'no receipt after MESSAGE_SUBMISSION_TIMEOUT (30000 ms); signed by 0x1234, which is no longer among the L2 signer keys: add it back (L2_SIGNER_PRIVATE_KEYS) to bump or cancel it',
    });
  });
});
