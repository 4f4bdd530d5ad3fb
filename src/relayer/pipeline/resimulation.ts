import { Status } from '../message/status.js';
import type { MessageRow } from '../db/repository.js';
import { encodeClaim, gasEstimate, isClaimedOnChain } from '../claim/facts.js';
import type { DirectionContext } from './context.js';

/**
 * NON_EXECUTABLE is not final: a claim that reverted (the destination was not ready: a paused contract, a
 * recipient that refused, a limit) or needed too much gas is estimated again on a doubling backoff
 * (RELAYER_RESIMULATE_DELAY_SECONDS, capped at RELAYER_RESIMULATE_MAX_DELAY_SECONDS), at most
 * RELAYER_RESIMULATE_PER_ITERATION per iteration. When the destination accepts it, the message goes back to
 * ANCHORED and the claiming loop claims it as any other. Messages a reorg made NON_EXECUTABLE have no
 * re-simulation time and are never picked. Read-only calls only; one indexed query per iteration.
 */
export function createResimulationProcessor(ctx: DirectionContext) {
  const r = ctx.config.operations.resimulate;
  const maxGas = ctx.config.claiming.maxClaimGasLimit;

  async function resimulate(m: MessageRow): Promise<void> {
    const n = m.resimulations + 1;
    // The claiming loop's estimate (eth_estimateGas: svc_estimateGas's fees are not wanted here).
    const estimate = await gasEstimate(ctx, encodeClaim(ctx, m), { unavailable: true });
    let why: string;
    if ('revert' in estimate) {
      if (await isClaimedOnChain(ctx, m)) {
        await ctx.repo.transition(
          m.id,
          [Status.NON_EXECUTABLE],
          Status.CLAIMED_SUCCESS,
          { retry_after: null, claimed_at: new Date() },
          `claimed on ${ctx.destination.name} by someone else; no transaction sent`,
        );
        return;
      }
      why = `claim reverts in gas estimation: ${estimate.revert}`;
    } else if (estimate.gas <= maxGas) {
      const reason = `re-simulation ${n}: the destination accepts the claim now (${estimate.gas} gas); claiming again`;
      const patch = { retry_after: null, resimulations: 0 };
      if (await ctx.repo.transition(m.id, [Status.NON_EXECUTABLE], Status.ANCHORED, patch, reason)) {
        ctx.logger.info(
          { message: m.message_hash, direction: ctx.direction, resimulations: n },
          `NON_EXECUTABLE message ${m.message_hash} is claimable again`,
        );
      }
      return;
    } else why = `claim needs ${estimate.gas} gas, above MAX_CLAIM_GAS_LIMIT ${maxGas}`;
    const delay = Math.min(r.maxDelaySeconds, r.delaySeconds * 2 ** n);
    await ctx.repo.annotate(m.id, Status.NON_EXECUTABLE, {
      failure_reason: `${why} (re-simulated ${n} time${n === 1 ? '' : 's'}; next in ${delay} s)`,
      retry_after: new Date(Date.now() + delay * 1_000),
      resimulations: n,
    });
  }

  return async function tick(): Promise<boolean> {
    if (!r.enabled) return false;
    const rows = await ctx.repo.dueResimulations(ctx.direction, r.perIteration);
    for (const m of rows) {
      if (ctx.signal?.aborted) break;
      await resimulate(m);
    }
    // The cap holds per iteration: the rest wait for the next one, after the loop's interval.
    return false;
  };
}
