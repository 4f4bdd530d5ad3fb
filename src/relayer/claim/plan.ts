import type { RelayerConfig } from '../config.js';
import { Status } from '../message/status.js';
import type { MessageRow } from '../db/rows.js';
import { directionPrefix, type DirectionContext } from '../pipeline/context.js';
import { coversCost, type FeeEstimate } from '../pipeline/fees.js';
import { claimedElsewhere, moveTo, type Move } from '../pipeline/receipt-plan.js';

/**
 * What the claiming loop decides about one due message, as pure functions of the message and the facts the
 * loop gathered (no chain, no database): tested alone in test/relayer/claim-plan.test.ts. The loop
 * (claiming.ts) gathers the facts a decision asks for and applies the decision.
 */

/** The settings a claim is judged by. */
export interface ClaimRules {
  claiming: Pick<
    RelayerConfig['claiming'],
    | 'maxNumberOfRetries'
    | 'maxClaimGasLimit'
    | 'maxFeePerGasCap'
    | 'maxRelayerSponsorGasLimit'
    | 'profitMargin'
    | 'retryDelaySeconds'
  >;
  /** `*_MAX_GAS_FEE_ENFORCED` of the destination. */
  maxGasFeeEnforced: boolean;
  /** `*_ENABLE_RELAYER_SPONSORING` of the direction. */
  sponsoringEnabled: boolean;
  /** L1 / L2: the destination, as reasons name it. */
  destination: string;
  /** L1_L2 / L2_L1: the prefix of the direction's variables, as reasons name them. */
  prefix: string;
  /** NON_EXECUTABLE claims are re-simulated (RELAYER_RESIMULATE_*): the first one after delaySeconds. */
  resimulate: { enabled: boolean; delaySeconds: number };
}

export const claimRules = (
  ctx: Pick<DirectionContext, 'config' | 'destinationConfig' | 'dir' | 'destination' | 'direction'>,
): ClaimRules => ({
  claiming: ctx.config.claiming,
  maxGasFeeEnforced: ctx.destinationConfig.maxGasFeeEnforced,
  sponsoringEnabled: ctx.dir.sponsoringEnabled,
  destination: ctx.destination.name,
  prefix: directionPrefix(ctx.direction),
  resimulate: ctx.config.operations.resimulate,
});

/** The claim's gas estimate on the destination, or the reason it reverts there. */
export type GasEstimate = { gas: bigint; fees?: FeeEstimate } | { revert: string };

export interface ClaimFacts {
  /** The clock (ms) that retry and re-simulation times count from. */
  now: number;
  /** The iteration's fees on the destination (a svc_estimateGas answer brings its own). */
  fees: FeeEstimate;
  /** Gathered when a decision asks for it. */
  estimate?: GasEstimate;
  /** Whether the destination lists the message as claimed: asked for only when the estimate reverted. */
  claimedOnChain?: boolean;
}

/**
 * `need`: gather this fact and plan again (facts cost calls, so each is asked for only when the decision
 * depends on it); `send`: claim it; `move`: a status transition from the message's status; `wait`: stay, with a
 * reason and a retry time.
 */
export type ClaimDecision =
  | { kind: 'need'; fact: 'estimate' | 'claimedOnChain' }
  | { kind: 'send'; gas: bigint; fees: FeeEstimate; sponsored: boolean }
  | Move
  | { kind: 'wait'; patch: { failure_reason: string; retry_after: Date } };

/** When a message put off by the fee, the fee cap or the L1 rate limit is looked at again. */
const retryAt = (facts: Pick<ClaimFacts, 'now'>, rules: ClaimRules) =>
  new Date(facts.now + rules.claiming.retryDelaySeconds * 1_000);
/** A wait on the L1 rate limit: the message stays, with `reason`, until retryAt. */
const rateLimitWait = (reason: string, facts: Pick<ClaimFacts, 'now'>, rules: ClaimRules) => ({
  failure_reason: reason,
  retry_after: retryAt(facts, rules),
});

/** NON_EXECUTABLE, written with the first re-simulation time when re-simulation is on. */
function nonExecutable(facts: ClaimFacts, rules: ClaimRules, reason: string): Move {
  const first = { retry_after: new Date(facts.now + rules.resimulate.delaySeconds * 1_000), resimulations: 0 };
  return moveTo(Status.NON_EXECUTABLE, rules.resimulate.enabled ? first : {}, reason);
}

/**
 * Whether and how to claim `m`: past MAX_NUMBER_OF_RETRIES it needs an operator; a claim that reverts in its
 * estimate was claimed already (CLAIMED_SUCCESS), hit the L1 rate limit (wait) or cannot execute
 * (NON_EXECUTABLE, as one above MAX_CLAIM_GAS_LIMIT); a fee cap exceeded or a fee below cost × PROFIT_MARGIN
 * is FEE_UNDERPRICED, a zero fee ZERO_FEE, unless the relayer sponsors it (within MAX_RELAYER_SPONSOR_GAS_LIMIT).
 */
export function planClaim(m: Pick<MessageRow, 'retries' | 'fee'>, facts: ClaimFacts, rules: ClaimRules): ClaimDecision {
  const c = rules.claiming;
  if (m.retries >= c.maxNumberOfRetries) {
    const reason = `${m.retries} claim submissions without success: MAX_NUMBER_OF_RETRIES (${c.maxNumberOfRetries}) reached`;
    return moveTo(Status.NEEDS_MANUAL_INTERVENTION, {}, reason);
  }
  const estimate = facts.estimate;
  if (!estimate) return { kind: 'need', fact: 'estimate' };
  if ('revert' in estimate) {
    // No separate "already claimed?" call per message: a claimed message makes the estimate revert, and
    // only then is its status read.
    if (facts.claimedOnChain === undefined) return { kind: 'need', fact: 'claimedOnChain' };
    if (facts.claimedOnChain)
      return claimedElsewhere(facts.now, `already claimed on ${rules.destination}; no transaction sent`);
    if (estimate.revert.startsWith('RateLimitExceeded'))
      return { kind: 'wait', patch: rateLimitWait('L1 rate limit reached; retried later', facts, rules) };
    return nonExecutable(facts, rules, `claim reverts in gas estimation: ${estimate.revert}`);
  }
  const gas = estimate.gas;
  const f = estimate.fees ?? facts.fees;
  if (gas > c.maxClaimGasLimit)
    return nonExecutable(facts, rules, `claim needs ${gas} gas, above MAX_CLAIM_GAS_LIMIT ${c.maxClaimGasLimit}`);
  if (rules.maxGasFeeEnforced && f.uncappedMaxFeePerGas > c.maxFeePerGasCap) {
    const reason = `estimated max fee per gas ${f.uncappedMaxFeePerGas} wei above MAX_FEE_PER_GAS_CAP ${c.maxFeePerGasCap} (${rules.destination}_MAX_GAS_FEE_ENFORCED)`;
    return moveTo(Status.FEE_UNDERPRICED, { retry_after: retryAt(facts, rules) }, reason);
  }
  return planFee(BigInt(m.fee), gas, f, facts, rules);
}

/** Who pays: the message's fee when it covers the cost × PROFIT_MARGIN, else the relayer when it sponsors. */
function planFee(fee: bigint, gas: bigint, f: FeeEstimate, facts: ClaimFacts, rules: ClaimRules): ClaimDecision {
  const c = rules.claiming;
  const sponsorable = rules.sponsoringEnabled && gas <= c.maxRelayerSponsorGasLimit;
  if (fee === 0n) {
    if (sponsorable) return { kind: 'send', gas, fees: f, sponsored: true };
    const reason = rules.sponsoringEnabled
      ? `zero-fee message needs ${gas} gas, above MAX_RELAYER_SPONSOR_GAS_LIMIT ${c.maxRelayerSponsorGasLimit}`
      : `zero-fee message and ${rules.prefix}_ENABLE_RELAYER_SPONSORING is false`;
    return moveTo(Status.ZERO_FEE, {}, reason);
  }
  if (coversCost(fee, gas, f.maxFeePerGas, c.profitMargin)) return { kind: 'send', gas, fees: f, sponsored: false };
  if (sponsorable) return { kind: 'send', gas, fees: f, sponsored: true };
  const reason = `fee ${fee} wei below estimated cost ${gas * f.maxFeePerGas} wei x PROFIT_MARGIN ${c.profitMargin}`;
  return moveTo(Status.FEE_UNDERPRICED, { retry_after: retryAt(facts, rules) }, reason);
}

/** The gas limit a claim is sent with: headroom over the estimate (the 63/64 rule, state changing before inclusion). */
export const claimGasLimit = (gas: bigint) => (gas * 6n) / 5n;

/**
 * Whether the claim fits what is left of the L1 withdrawal rate limit this period (`left`; undefined: no limit
 * in this direction): what is left after it, or the wait it gets.
 */
export function fitRateLimit(
  m: Pick<MessageRow, 'fee' | 'value'>,
  left: bigint | undefined,
  facts: Pick<ClaimFacts, 'now'>,
  rules: ClaimRules,
): { fits: true; left: bigint | undefined } | { fits: false; wait: { failure_reason: string; retry_after: Date } } {
  if (left === undefined) return { fits: true, left };
  const amount = BigInt(m.fee) + BigInt(m.value);
  if (amount > left) {
    const reason = `L1 rate limit: ${amount} wei does not fit the ${left} wei left in the period; retried later`;
    return { fits: false, wait: rateLimitWait(reason, facts, rules) };
  }
  return { fits: true, left: left - amount };
}
