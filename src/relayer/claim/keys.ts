import { BroadcastRefusedError, NonceGapError } from '../broadcast-errors.js';
import type { MessageRow } from '../db/rows.js';
import type { SignerFunds } from './funds.js';
import type { ClaimSender, PlannedClaim } from './sender.js';
import type { DirectionContext } from '../pipeline/context.js';
import type { FeeEstimate } from '../pipeline/fees.js';

/** One signer's share of a claiming iteration: its balance, what is left of it, and the claims gathered for it. */
export interface Key {
  sender: ClaimSender;
  funds: SignerFunds;
  balance: bigint;
  budget: bigint;
  batch: PlannedClaim[];
  /** Set when the node refused one of its claims for lack of funds: it takes no more this iteration. */
  refusedForFunds?: BroadcastRefusedError;
  out: boolean;
}

/** The signers of an iteration, each with its balance read once at its start (below the threshold: out). */
export async function readKeys(senders: readonly ClaimSender[], fundsOf: readonly SignerFunds[]): Promise<Key[]> {
  const balances = await Promise.all(fundsOf.map((f) => f.read()));
  const keys: Key[] = senders.map((sender, i) => ({
    sender,
    funds: fundsOf[i]!,
    balance: balances[i]!,
    budget: balances[i]!,
    batch: [],
    out: fundsOf[i]!.belowThreshold(balances[i]!),
  }));
  return keys;
}

/** The signers that may still take claims this iteration. */
export const live = (keys: readonly Key[]) => keys.filter((k) => !k.out && !k.refusedForFunds);

/**
 * Paused for lack of funds: the unpaid claim re-priced at today's fees says whether it is worth planning (and
 * estimating gas for) every due message again; a signer that still cannot pay it is out.
 */
export function leaveOutUnpaid(keys: readonly Key[], fees: FeeEstimate): void {
  for (const k of live(keys)) {
    const unpaid = k.funds.paused?.gasLimit;
    if (unpaid !== undefined && k.balance < unpaid * fees.maxFeePerGas) {
      k.funds.cannotPay(k.balance, unpaid, fees.maxFeePerGas);
      k.out = true;
    }
  }
}

/**
 * The signer for a claim of `gasLimit` at `maxFeePerGas`: among those that can still pay it, one whose nonce is
 * moving (a stalled one only if all are, `stallMs`), the least loaded (claims in flight plus gathered). A signer
 * that cannot pay it is paused for funds (logged once) and takes no more claims this iteration.
 */
export function pickKey(
  keys: readonly Key[],
  gasLimit: bigint,
  maxFeePerGas: bigint,
  stallMs: number,
): Key | undefined {
  const cost = gasLimit * maxFeePerGas;
  const candidates: Key[] = [];
  for (const k of live(keys)) {
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
  return pool.reduce((best, k) =>
    k.sender.inFlight() + k.batch.length < best.sender.inFlight() + best.batch.length ? k : best,
  );
}

/** Records on the message why its claim attempt failed (the first line of `err`); a failed write is ignored. */
export const noteFailedAttempt = (ctx: Pick<DirectionContext, 'repo'>, m: MessageRow, err: unknown) =>
  ctx.repo
    .annotate(m.id, m.status, { failure_reason: `claim attempt failed: ${(err as Error).message.split('\n')[0]}` })
    .catch(() => undefined);

/**
 * Leases nonces for, signs and records the claims gathered for one signer, in one database transaction; their
 * broadcasts are added to `broadcasts`. Returns the error that stopped them (their messages annotated with it),
 * except a nonce gap, which only takes this signer out.
 */
export async function flushKey(
  ctx: Pick<DirectionContext, 'repo' | 'signal'>,
  k: Key,
  broadcasts: Promise<void>[],
): Promise<unknown> {
  const claims = k.batch;
  k.batch = [];
  if (claims.length === 0 || ctx.signal?.aborted) return undefined;
  try {
    // Claims beyond MAX_NONCE_DIFF are not sent: the next lease pauses (logged, in metrics).
    const submitted = await k.sender.submitMany(claims);
    const claimOf = new Map(claims.map((b) => [b.message.id, b.claim]));
    for (const s of submitted) {
      const cost = claimOf.get(s.message.id)!;
      s.sent.then(
        // A pause ends when the node takes a claim, not when one is signed.
        () => k.funds.resume(),
        // The node's own check of the balance (e.g. counting our earlier claims still in its pool) wins.
        (err: unknown) => {
          if (err instanceof BroadcastRefusedError && err.insufficientFunds && !k.refusedForFunds) {
            k.refusedForFunds = err;
            const why = ': the node refused a claim for insufficient funds';
            k.funds.cannotPay(k.budget, cost.gasLimit, cost.maxFeePerGas, why);
          }
        },
      );
      broadcasts.push(s.sent);
    }
    return undefined;
  } catch (err) {
    if (err instanceof NonceGapError) {
      // This signer's nonce ran too far ahead of the chain; the others go on.
      k.out = true;
      return undefined;
    }
    await Promise.all(claims.map((b) => noteFailedAttempt(ctx, b.message, err)));
    return err;
  }
}
