/*
 * The claim step, read top to bottom in this folder: claiming.ts (the loop: due ANCHORED and FEE_UNDERPRICED
 * messages, planned concurrently, handed to signers), plan.ts (what to do with one message: a pure function of
 * the facts), facts.ts (what the destination chain is asked: estimate, already claimed, rate limit), calldata.ts
 * (the claim's calldata), keys.ts and funds.ts (which signer pays, and the pause when none can), sender.ts (sign
 * and record), lease.ts (nonces leased and messages moved to PENDING in one transaction), broadcaster.ts (sent in
 * nonce order, what failed given back). A status moves only through ../message/ (the transition table and its one
 * writer).
 */
import { concurrency } from '../../common/concurrency.js';
import type { MessageRow } from '../db/rows.js';
import { Status } from '../message/status.js';
import { CLAIMABLE } from '../message/transitions.js';
import { SignerFunds } from './funds.js';
import { BroadcastRefusedError } from '../broadcast-errors.js';
import {
  createClaimViaCheck,
  encodeClaim,
  gasEstimate,
  isClaimedOnChain,
  rateLimitRoom,
  type SvcEstimateState,
} from './facts.js';
import { flushKey, leaveOutUnpaid, live, noteFailedAttempt, pickKey, readKeys, type Key } from './keys.js';
import {
  claimGasLimit,
  claimRules,
  fitRateLimit,
  planClaim,
  type ClaimDecision,
  type ClaimFacts,
  type ClaimRules,
} from './plan.js';
import { claimTarget, duePage, sendersOf, type DirectionContext } from '../pipeline/context.js';
import { estimateFees, type FeeEstimate } from '../pipeline/fees.js';

const PLAN_CONCURRENCY = 16;
/** Claims leased, signed and recorded per database transaction. */
const SUBMIT_CHUNK = 32;

type Plan = { send: false } | { send: true; data: string; gas: bigint; fees: FeeEstimate; sponsored: boolean };
const NONE: Plan = { send: false };

/** Writes a decision that settles the message without a claim: a status transition, or a wait. */
async function settle(
  ctx: DirectionContext,
  m: MessageRow,
  d: Extract<ClaimDecision, { kind: 'move' | 'wait' }>,
): Promise<void> {
  if (d.kind === 'wait') {
    await ctx.repo.annotate(m.id, m.status, d.patch);
    return;
  }
  const moved = await ctx.repo.transition(m.id, [m.status], d.to, d.patch, d.reason);
  if (moved && d.to === Status.NEEDS_MANUAL_INTERVENTION) {
    ctx.logger.error(
      { message: m.message_hash, direction: ctx.direction, retries: m.retries },
      `message ${m.message_hash} needs manual intervention: ${d.reason}`,
    );
  }
}

/**
 * Plans one message (planClaim), gathering the facts it asks for (read-only calls; run concurrently), and
 * settles it unless a claim should be sent.
 */
function createPlanner(ctx: DirectionContext, rules: ClaimRules) {
  const svc: SvcEstimateState = { unavailable: false };
  return async function plan(m: MessageRow, fees: FeeEstimate): Promise<Plan> {
    if (ctx.signal?.aborted) return NONE;
    const facts: ClaimFacts = { now: Date.now(), fees };
    let data: string | undefined;
    // planClaim asks for at most two facts (the estimate, then whether it is claimed): three rounds at most.
    for (let round = 0; round < 3; round++) {
      const d = planClaim(m, facts, rules);
      if (d.kind === 'send') return { send: true, data: data!, gas: d.gas, fees: d.fees, sponsored: d.sponsored };
      if (d.kind !== 'need') {
        await settle(ctx, m, d);
        return NONE;
      }
      if (d.fact === 'estimate') {
        data = encodeClaim(ctx, m);
        facts.estimate = await gasEstimate(ctx, data, svc);
      } else facts.claimedOnChain = await isClaimedOnChain(ctx, m);
      facts.now = Date.now();
    }
    throw new Error(`planClaim of message ${m.message_hash} kept asking for facts`);
  };
}

/** What one iteration of the claiming loop carries from message to message. */
interface Round {
  ctx: DirectionContext;
  rules: ClaimRules;
  keys: Key[];
  broadcasts: Promise<void>[];
  firstError: unknown;
  /** No signer can pay: claiming of the direction waits for the next iteration. */
  paused: boolean;
  /** What is left of the L1 rate limit this period (L2→L1 only). */
  room: bigint | undefined;
  /**
   * A signer whose mined nonce has not moved for this long while it has claims in flight gets new claims only when
   * every other one is stalled too.
   */
  stallMs: number;
}

/** Gives a planned claim to a signer that can pay it; false when none can (claiming of the direction waits). */
async function gather(round: Round, m: MessageRow, p: Extract<Plan, { send: true }>): Promise<boolean> {
  const { ctx, rules } = round;
  const gasLimit = claimGasLimit(p.gas);
  const cost = gasLimit * p.fees.maxFeePerGas;
  // Every claim of the iteration is paid from the signer's balance read once at its start.
  let k = pickKey(round.keys, gasLimit, p.fees.maxFeePerGas, round.stallMs);
  if (!k) {
    // No signer can pay this claim: each is paused for funds (logged once), and claiming of the direction waits.
    for (const x of live(round.keys)) {
      x.funds.cannotPay(
        x.budget,
        gasLimit,
        p.fees.maxFeePerGas,
        x.budget === x.balance ? '' : ` after the claims sent in this iteration (balance ${x.balance} wei)`,
      );
      x.out = true;
    }
    return false;
  }
  const fit = fitRateLimit(m, round.room, { now: Date.now() }, rules);
  if (!fit.fits) {
    await ctx.repo.annotate(m.id, m.status, fit.wait);
    return true;
  }
  round.room = fit.left;
  // The rate-limit read may have let a refusal land meanwhile: pick again if that signer is out.
  if (k.out || k.refusedForFunds) k = pickKey(round.keys, gasLimit, p.fees.maxFeePerGas, round.stallMs);
  if (!k) return false;
  k.budget -= cost;
  k.batch.push({
    message: m,
    from: [m.status],
    claim: {
      to: claimTarget(ctx),
      data: p.data,
      gasLimit,
      maxFeePerGas: p.fees.maxFeePerGas,
      maxPriorityFeePerGas: p.fees.maxPriorityFeePerGas,
      sponsored: p.sponsored,
    },
  });
  // Sent in chunks as their checks finish, so broadcasting overlaps with checking the rest.
  if (k.batch.length >= SUBMIT_CHUNK) round.firstError ??= await flushKey(ctx, k, round.broadcasts);
  return true;
}

/** Takes the plans in the pipeline's order and hands each claim to a signer, until stopping or paused. */
async function claimAll(round: Round, rows: readonly MessageRow[], plans: readonly Promise<Plan>[]): Promise<void> {
  const { ctx } = round;
  for (const [i, m] of rows.entries()) {
    // Stopping (shutdown, lost leadership): no new nonce is leased; claims already signed are broadcast.
    if (ctx.signal?.aborted || round.paused) break;
    if (live(round.keys).length === 0) {
      round.paused = true;
      break;
    }
    try {
      const p = await plans[i]!;
      if (!p.send) continue;
      if (!(await gather(round, m, p))) {
        round.paused = true;
        break;
      }
    } catch (err) {
      round.firstError ??= err;
      await noteFailedAttempt(ctx, m, err);
    }
  }
  // What was gathered before a pause for funds is still paid for and sent.
  for (const k of round.keys) round.firstError ??= await flushKey(ctx, k, round.broadcasts);
  // Plans not reached (stopping, paused) still settle their messages, and none may reject unobserved.
  await Promise.allSettled(plans);
  // A failed broadcast has already returned its message (undo); the first failure is reported, except a
  // refusal for lack of funds, which the pause reports once.
  for (const r of await Promise.allSettled(round.broadcasts)) {
    if (r.status === 'rejected' && !(r.reason instanceof BroadcastRefusedError && r.reason.insufficientFunds))
      round.firstError ??= r.reason;
  }
}

/**
 * Claims due messages of one direction on the destination chain. Each message is checked (already
 * claimed? executable within MAX_CLAIM_GAS_LIMIT? fee worth it or sponsored? L1 rate limit?) and sent
 * without waiting for receipts, so one slow message never holds back the next; the receipt persister
 * resolves them. The checks are planClaim's (plan.ts); this loop gathers facts and applies decisions.
 */
export function createClaimingProcessor(ctx: DirectionContext) {
  const c = ctx.config.claiming;
  const rules = claimRules(ctx);
  const plan = createPlanner(ctx, rules);
  const checkClaimVia = createClaimViaCheck(ctx);
  const senders = sendersOf(ctx);
  const fundsOf = ctx.funds ?? senders.map((s) => new SignerFunds(ctx, s.signer.address));
  return async function tick(): Promise<boolean> {
    const keys = await readKeys(senders, fundsOf);
    if (live(keys).length === 0) return false;
    const rows = await duePage(ctx, CLAIMABLE);
    if (rows.length === 0) {
      for (const k of live(keys)) if (k.funds.paused && k.balance >= k.funds.paused.needed) k.funds.resume();
      return false;
    }
    await checkClaimVia();
    const fees = await estimateFees(ctx);
    leaveOutUnpaid(keys, fees);
    if (live(keys).length === 0) return false;
    const room = ctx.direction === 'L2_TO_L1' ? await rateLimitRoom(ctx) : undefined;
    // Checks and gas estimates run PLAN_CONCURRENCY at a time; the claims then go out in one nonce lease.
    const limiter = concurrency(PLAN_CONCURRENCY);
    const plans = rows.map((m) => limiter(() => plan(m, fees)));
    const round: Round = {
      ctx,
      rules,
      keys,
      broadcasts: [],
      firstError: undefined,
      paused: false,
      room,
      stallMs: c.messageSubmissionTimeoutMs,
    };
    await claimAll(round, rows, plans);
    if (live(keys).length === 0) round.paused = true;
    if (round.paused) return false;
    if (round.firstError) throw round.firstError;
    return rows.length === ctx.config.maxFetchMessagesFromDb;
  };
}
