import { describeRevert, isRevert } from '../chain.js';
import { encodeClaimMessageWithProofCall } from '../claim-calldata.js';
import type { MessageRow } from '../db/repository.js';
import { SignerFunds } from '../funds.js';
import { BroadcastRefusedError, NonceGapError } from '../broadcast-errors.js';
import type { PlannedClaim } from '../sender.js';
import { claimFeeRecipient, claimTarget, directionPrefix, nonExecutablePatch, sendersOf, type DirectionContext } from './context.js';
import { UNCHANGED_ROWS_MAX_AGE_MS } from './loop.js';
import { coversCost, estimateFees, type FeeEstimate } from './fees.js';
import { encodeClaimMessage, inboxStatus } from './l1-to-l2.js';

const CLAIMABLE = ['ANCHORED', 'FEE_UNDERPRICED'] as const;
const PLAN_CONCURRENCY = 16;
/** Claims leased, signed and recorded per database transaction. */
const SUBMIT_CHUNK = 32;

/** Runs at most `n` of the given tasks at once. */
function concurrency(n: number) {
  let active = 0;
  const queue: (() => void)[] = [];
  return <T>(task: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const run = () => {
        active++;
        task().then(resolve, reject).finally(() => {
          active--;
          queue.shift()?.();
        });
      };
      if (active < n) run();
      else queue.push(run);
    });
}

/** The claim's calldata (hand-encoded, see src/relayer/claim-calldata.ts). */
export function encodeClaim(ctx: DirectionContext, m: MessageRow): string {
  if (ctx.direction === 'L1_TO_L2') return encodeClaimMessage(ctx, m);
  if (m.proof === null || m.leaf_index === null || m.merkle_root === null) {
    throw new Error(`message ${m.message_hash} has no Merkle proof yet; it cannot be claimed on L1`);
  }
  return encodeClaimMessageWithProofCall({
    proof: m.proof,
    nonce: m.message_nonce,
    leafIndex: m.leaf_index,
    from: m.message_sender,
    to: m.destination,
    fee: m.fee,
    value: m.value,
    feeRecipient: claimFeeRecipient(ctx),
    merkleRoot: m.merkle_root,
    calldata: m.calldata,
  });
}

async function view(ctx: DirectionContext, fn: string, args: unknown[]): Promise<bigint | boolean> {
  const iface = ctx.destination.iface;
  const out = await ctx.destination.provider.call({ to: ctx.destination.contract, data: iface.encodeFunctionData(fn, args) });
  return iface.decodeFunctionResult(fn, out)[0] as bigint | boolean;
}

/** Whether the message is already claimed on the destination (by us earlier, or by anyone). */
export async function isClaimedOnChain(ctx: DirectionContext, m: MessageRow): Promise<boolean> {
  if (ctx.direction === 'L1_TO_L2') return (await inboxStatus(ctx, m.message_hash)) === 2;
  return (await view(ctx, 'isMessageClaimed', [m.message_nonce])) as boolean;
}

/** Room left in the L1 withdrawal rate limit, from the contract's public state at the latest block. */
async function rateLimitRoom(ctx: DirectionContext): Promise<bigint> {
  const [limit, used, periodEnd, block] = await Promise.all([
    view(ctx, 'limitInWei', []),
    view(ctx, 'currentPeriodAmountInWei', []),
    view(ctx, 'currentPeriodEnd', []),
    ctx.destination.provider.getBlock('latest'),
  ]);
  const inPeriod = BigInt(block!.timestamp) <= (periodEnd as bigint);
  return (limit as bigint) - (inPeriod ? (used as bigint) : 0n);
}

/** Per claiming processor: set once the L2 node answered that it does not serve svc_estimateGas. */
interface SvcEstimateState {
  unavailable: boolean;
}

async function estimateGas(ctx: DirectionContext, data: string, svc: SvcEstimateState): Promise<{ gas: bigint; fees?: FeeEstimate }> {
  const tx = { from: ctx.sender.signer.address, to: claimTarget(ctx), data };
  if (ctx.direction === 'L1_TO_L2' && ctx.config.enableSvcEstimateGas && !svc.unavailable) {
    try {
      const r = (await ctx.destination.provider.send('svc_estimateGas', [tx])) as { gasLimit: string; baseFeePerGas: string; priorityFeePerGas: string };
      const uncapped = BigInt(r.baseFeePerGas) + BigInt(r.priorityFeePerGas);
      const cap = ctx.config.claiming.maxFeePerGasCap;
      const maxFeePerGas = uncapped > cap ? cap : uncapped;
      const tip = BigInt(r.priorityFeePerGas);
      return { gas: BigInt(r.gasLimit), fees: { maxFeePerGas, maxPriorityFeePerGas: tip > maxFeePerGas ? maxFeePerGas : tip, uncappedMaxFeePerGas: uncapped } };
    } catch (err) {
      if (!/-32601|not (exist|available|supported)|method not found/i.test(String((err as Error).message))) throw err;
      svc.unavailable = true;
      ctx.logger.warn('ENABLE_SVC_ESTIMATE_GAS is true but the L2 node does not serve svc_estimateGas; using eth_estimateGas');
    }
  }
  return { gas: await ctx.destination.provider.estimateGas(tx) };
}

/**
 * Claims due messages of one direction on the destination chain. Each message is checked (already
 * claimed? executable within MAX_CLAIM_GAS_LIMIT? fee worth it or sponsored? L1 rate limit?) and sent
 * without waiting for receipts, so one slow message never holds back the next; the receipt persister
 * resolves them.
 */
export function createClaimingProcessor(ctx: DirectionContext) {
  const c = ctx.config.claiming;
  const prefix = directionPrefix(ctx.direction);
  const retryAfter = () => new Date(Date.now() + c.retryDelaySeconds * 1_000);
  const svc: SvcEstimateState = { unavailable: false };
  let viaChecked = false;

  /**
   * A claim-via address without code would take every claim as a plain successful call that claims
   * nothing: claiming waits (the loop logs the error) until code is found there.
   */
  async function checkClaimVia(): Promise<void> {
    const via = ctx.destinationConfig.claimViaAddress;
    if (via === undefined || viaChecked) return;
    if ((await ctx.destination.provider.getCode(via)) === '0x') {
      throw new Error(`${ctx.destination.name}_CLAIM_VIA_ADDRESS ${via} has no contract code on ${ctx.destination.name}; no claim is sent until it has`);
    }
    viaChecked = true;
  }

  type Plan = { send: false } | { send: true; data: string; gas: bigint; fees: FeeEstimate; sponsored: boolean };

  /** Checks one message and settles it unless a claim should be sent (read-only calls, run concurrently). */
  async function plan(m: MessageRow, fees: FeeEstimate): Promise<Plan> {
    const from = [m.status];
    const none = { send: false } as const;
    if (ctx.signal?.aborted) return none;
    if (m.retries >= c.maxNumberOfRetries) {
      const reason = `${m.retries} claim submissions without success: MAX_NUMBER_OF_RETRIES (${c.maxNumberOfRetries}) reached`;
      if (await ctx.repo.transition(m.id, from, 'NEEDS_MANUAL_INTERVENTION', {}, reason)) {
        ctx.logger.error({ message: m.message_hash, direction: ctx.direction, retries: m.retries }, `message ${m.message_hash} needs manual intervention: ${reason}`);
      }
      return none;
    }
    const data = encodeClaim(ctx, m);
    let estimate: { gas: bigint; fees?: FeeEstimate };
    try {
      // No separate "already claimed?" call per message: a claimed message makes the estimate revert, and
      // only then is its status read.
      estimate = await estimateGas(ctx, data, svc);
    } catch (err) {
      if (!isRevert(err)) throw err;
      if (await isClaimedOnChain(ctx, m)) {
        await ctx.repo.transition(m.id, from, 'CLAIMED_SUCCESS', { claimed_at: new Date() }, `already claimed on ${ctx.destination.name}; no transaction sent`);
        return none;
      }
      const reason = describeRevert(ctx.destination.iface, err);
      if (reason.startsWith('RateLimitExceeded')) {
        await ctx.repo.annotate(m.id, m.status, { failure_reason: 'L1 rate limit reached; retried later', retry_after: retryAfter() });
      } else await ctx.repo.transition(m.id, from, 'NON_EXECUTABLE', nonExecutablePatch(ctx.config), `claim reverts in gas estimation: ${reason}`);
      return none;
    }
    const gas = estimate.gas;
    const f = estimate.fees ?? fees;
    if (gas > c.maxClaimGasLimit) {
      await ctx.repo.transition(m.id, from, 'NON_EXECUTABLE', nonExecutablePatch(ctx.config), `claim needs ${gas} gas, above MAX_CLAIM_GAS_LIMIT ${c.maxClaimGasLimit}`);
      return none;
    }
    if (ctx.destinationConfig.maxGasFeeEnforced && f.uncappedMaxFeePerGas > c.maxFeePerGasCap) {
      const reason = `estimated max fee per gas ${f.uncappedMaxFeePerGas} wei above MAX_FEE_PER_GAS_CAP ${c.maxFeePerGasCap} (${ctx.destination.name}_MAX_GAS_FEE_ENFORCED)`;
      await ctx.repo.transition(m.id, from, 'FEE_UNDERPRICED', { retry_after: retryAfter() }, reason);
      return none;
    }
    const fee = BigInt(m.fee);
    const sponsorable = ctx.dir.sponsoringEnabled && gas <= c.maxRelayerSponsorGasLimit;
    let sponsored = false;
    if (fee === 0n) {
      if (!sponsorable) {
        const reason = ctx.dir.sponsoringEnabled
          ? `zero-fee message needs ${gas} gas, above MAX_RELAYER_SPONSOR_GAS_LIMIT ${c.maxRelayerSponsorGasLimit}`
          : `zero-fee message and ${prefix}_ENABLE_RELAYER_SPONSORING is false`;
        await ctx.repo.transition(m.id, from, 'ZERO_FEE', {}, reason);
        return none;
      }
      sponsored = true;
    } else if (!coversCost(fee, gas, f.maxFeePerGas, c.profitMargin)) {
      if (!sponsorable) {
        const reason = `fee ${fee} wei below estimated cost ${gas * f.maxFeePerGas} wei x PROFIT_MARGIN ${c.profitMargin}`;
        await ctx.repo.transition(m.id, from, 'FEE_UNDERPRICED', { retry_after: retryAfter() }, reason);
        return none;
      }
      sponsored = true;
    }
    return { send: true, data, gas, fees: f, sponsored };
  }

  /** Whether the claim fits what is left of the L1 rate limit this period (taken from it if so). */
  async function fitsRateLimit(m: MessageRow, room: { left: bigint } | undefined): Promise<boolean> {
    if (!room) return true;
    const amount = BigInt(m.fee) + BigInt(m.value);
    if (amount > room.left) {
      await ctx.repo.annotate(m.id, m.status, { failure_reason: `L1 rate limit: ${amount} wei does not fit the ${room.left} wei left in the period; retried later`, retry_after: retryAfter() });
      return false;
    }
    room.left -= amount;
    return true;
  }

  const senders = sendersOf(ctx);
  const fundsOf = ctx.funds ?? senders.map((s) => new SignerFunds({ direction: ctx.direction, chain: ctx.destination, address: s.signer.address, minBalanceWei: ctx.destinationConfig.signerMinBalanceWei, logger: ctx.logger, metrics: ctx.metrics }));
  /** A signer whose mined nonce has not moved for this long while it has claims in flight gets new claims only when every other one is stalled too. */
  const stallMs = c.messageSubmissionTimeoutMs;

  /** One signer's share of an iteration: its balance, what is left of it, and the claims gathered for it. */
  interface Key {
    sender: (typeof senders)[number];
    funds: SignerFunds;
    balance: bigint;
    budget: bigint;
    batch: PlannedClaim[];
    /** Set when the node refused one of its claims for lack of funds: it takes no more this iteration. */
    refusedForFunds?: BroadcastRefusedError;
    out: boolean;
  }

  return async function tick(): Promise<boolean> {
    const balances = await Promise.all(fundsOf.map((f) => f.read()));
    const keys: Key[] = senders.map((sender, i) => ({ sender, funds: fundsOf[i]!, balance: balances[i]!, budget: balances[i]!, batch: [], out: false }));
    for (const k of keys) k.out = k.funds.belowThreshold(k.balance);
    const live = () => keys.filter((k) => !k.out && !k.refusedForFunds);
    if (live().length === 0) return false;
    const rows = await ctx.repo.dueChanged(ctx.direction, CLAIMABLE, ctx.config.maxFetchMessagesFromDb, UNCHANGED_ROWS_MAX_AGE_MS);
    if (rows.length === 0) {
      for (const k of live()) if (k.funds.paused && k.balance >= k.funds.paused.needed) k.funds.resume();
      return false;
    }
    await checkClaimVia();
    const fees = await estimateFees(ctx.destination, c.gasEstimationPercentile, c.maxFeePerGasCap);
    // Paused for lack of funds: the unpaid claim re-priced at today's fees says whether it is worth planning
    // (and estimating gas for) every due message again.
    for (const k of live()) {
      const unpaid = k.funds.paused?.gasLimit;
      if (unpaid !== undefined && k.balance < unpaid * fees.maxFeePerGas) {
        k.funds.cannotPay(k.balance, unpaid, fees.maxFeePerGas);
        k.out = true;
      }
    }
    if (live().length === 0) return false;
    const room = ctx.direction === 'L2_TO_L1' ? { left: await rateLimitRoom(ctx) } : undefined;
    let firstError: unknown;
    const plans: Promise<Plan>[] = [];
    // Checks and gas estimates run PLAN_CONCURRENCY at a time; the claims then go out in one nonce lease.
    const limiter = concurrency(PLAN_CONCURRENCY);
    for (const m of rows) plans.push(limiter(() => plan(m, fees)));
    const broadcasts: Promise<void>[] = [];
    let paused = false;

    /**
     * The signer for a claim costing `cost`: among those that can still pay it, one whose nonce is moving (a
     * stalled one only if all are), the least loaded (claims in flight plus gathered). A signer that cannot
     * pay it is paused for funds (logged once) and takes no more claims this iteration.
     */
    const pick = (gasLimit: bigint, maxFeePerGas: bigint): Key | undefined => {
      const cost = gasLimit * maxFeePerGas;
      const candidates: Key[] = [];
      for (const k of live()) {
        if (k.budget >= cost) candidates.push(k);
        else if (k.balance < cost && keys.length > 1) {
          // Not even its whole balance pays this claim: paused (logged once) until funded. (With one signer the
          // caller reports it, as before.)
          k.funds.cannotPay(k.balance, gasLimit, maxFeePerGas);
          k.out = true;
        }
      }
      if (candidates.length === 0) return undefined;
      const moving = candidates.filter((k) => !k.sender.stalledFor(stallMs));
      const pool = moving.length > 0 ? moving : candidates;
      return pool.reduce((best, k) => (k.sender.inFlight() + k.batch.length < best.sender.inFlight() + best.batch.length ? k : best));
    };

    /** Leases nonces for, signs and records the claims gathered for one signer, in one database transaction. */
    const flush = async (k: Key): Promise<void> => {
      const claims = k.batch;
      k.batch = [];
      if (claims.length === 0 || ctx.signal?.aborted) return;
      try {
        // Claims beyond MAX_NONCE_DIFF are not sent: the next lease pauses (logged, in metrics).
        const submitted = await k.sender.submitMany(claims);
        const claimOf = new Map(claims.map((b) => [b.message.id, b.claim]));
        for (const s of submitted) {
          const cost = claimOf.get(s.message.id)!;
          // A pause ends when the node takes a claim, not when one is signed.
          s.sent.then(() => k.funds.resume(), () => undefined);
          // The node's own check of the balance (e.g. counting our earlier claims still in its pool) wins.
          s.sent.catch((err: unknown) => {
            if (err instanceof BroadcastRefusedError && err.insufficientFunds && !k.refusedForFunds) {
              k.refusedForFunds = err;
              k.funds.cannotPay(k.budget, cost.gasLimit, cost.maxFeePerGas, ': the node refused a claim for insufficient funds');
            }
          });
          broadcasts.push(s.sent);
        }
      } catch (err) {
        if (err instanceof NonceGapError) {
          // This signer's nonce ran too far ahead of the chain; the others go on.
          k.out = true;
          return;
        }
        firstError ??= err;
        const reason = `claim attempt failed: ${(err as Error).message.split('\n')[0]}`;
        await Promise.all(claims.map((b) => ctx.repo.annotate(b.message.id, b.message.status, { failure_reason: reason }).catch(() => undefined)));
      }
    };
    for (const [i, m] of rows.entries()) {
      // Stopping (shutdown, lost leadership): no new nonce is leased; claims already signed are broadcast.
      if (ctx.signal?.aborted || paused) break;
      if (live().length === 0) {
        paused = true;
        break;
      }
      try {
        const p = await plans[i]!;
        if (!p.send) continue;
        // Headroom over the estimate: the 63/64 rule and state changes between estimate and inclusion.
        const gasLimit = (p.gas * 6n) / 5n;
        const cost = gasLimit * p.fees.maxFeePerGas;
        // Every claim of the iteration is paid from the signer's balance read once at its start.
        let k = pick(gasLimit, p.fees.maxFeePerGas);
        if (!k) {
          // No signer can pay this claim: each is paused for funds (logged once), and claiming of the direction waits.
          for (const x of live()) {
            x.funds.cannotPay(x.budget, gasLimit, p.fees.maxFeePerGas, x.budget === x.balance ? '' : ` after the claims sent in this iteration (balance ${x.balance} wei)`);
            x.out = true;
          }
          paused = true;
          break;
        }
        if (!(await fitsRateLimit(m, room))) continue;
        // The rate-limit read may have let a refusal land meanwhile: pick again if that signer is out.
        if (k.out || k.refusedForFunds) k = pick(gasLimit, p.fees.maxFeePerGas);
        if (!k) {
          paused = true;
          break;
        }
        k.budget -= cost;
        k.batch.push({ message: m, from: [m.status], claim: { to: claimTarget(ctx), data: p.data, gasLimit, maxFeePerGas: p.fees.maxFeePerGas, maxPriorityFeePerGas: p.fees.maxPriorityFeePerGas, sponsored: p.sponsored } });
        // Sent in chunks as their checks finish, so broadcasting overlaps with checking the rest.
        if (k.batch.length >= SUBMIT_CHUNK) await flush(k);
      } catch (err) {
        firstError ??= err;
        await ctx.repo.annotate(m.id, m.status, { failure_reason: `claim attempt failed: ${(err as Error).message.split('\n')[0]}` }).catch(() => undefined);
      }
    }
    // What was gathered before a pause for funds is still paid for and sent.
    for (const k of keys) await flush(k);
    // Plans not reached (stopping, paused) still settle their messages, and none may reject unobserved.
    await Promise.allSettled(plans);
    // A failed broadcast has already returned its message (undo); the first failure is reported, except a
    // refusal for lack of funds, which the pause reports once.
    for (const r of await Promise.allSettled(broadcasts)) {
      if (r.status === 'rejected' && !(r.reason instanceof BroadcastRefusedError && r.reason.insufficientFunds)) firstError ??= r.reason;
    }
    if (live().length === 0) paused = true;
    if (paused) return false;
    if (firstError) throw firstError;
    return rows.length === ctx.config.maxFetchMessagesFromDb;
  };
}
