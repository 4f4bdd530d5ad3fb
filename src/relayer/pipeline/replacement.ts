import { Transaction } from 'ethers';
import { Status } from '../message/status.js';
import { SELF_TRANSFER_GAS, transactionHash } from '../claim/broadcaster.js';
import type { ClaimSender } from '../claim/sender.js';
import type { MessageRow } from '../db/rows.js';
import type { DirectionContext } from './context.js';
import { estimateFees, type FeeEstimate } from './fees.js';
import { planReplacement, type ReceiptRules } from './receipt-plan.js';

/**
 * Replaces a claim past MESSAGE_SUBMISSION_TIMEOUT (or stranded: STRANDED_CLAIM_MS) as planReplacement says (a
 * fee bump or a cancellation at the same nonce). The replacement is broadcast before it is recorded: if we crash
 * in between, whichever version is mined uses the nonce and the next iteration sorts it out.
 */
export async function replaceClaim(
  ctx: DirectionContext,
  rules: ReceiptRules,
  m: MessageRow,
  sender: ClaimSender | undefined,
  stranded: boolean,
): Promise<void> {
  const old = sender ? Transaction.from(m.claim_tx_raw!) : undefined;
  const oldFees = { maxFeePerGas: old?.maxFeePerGas ?? 0n, maxPriorityFeePerGas: old?.maxPriorityFeePerGas ?? 0n };
  // Today's fees are asked for only once the plan needs them (the signer is known).
  const planned = (fresh?: FeeEstimate) => planReplacement(m, oldFees, fresh, sender !== undefined, rules, stranded);
  let plan = planned();
  if (plan.kind === 'need') plan = planned(await estimateFees(ctx));
  if (plan.kind === 'need' || plan.kind === 'wait') {
    if (plan.kind === 'wait' && m.failure_reason !== plan.reason)
      await ctx.repo.annotate(m.id, Status.PENDING, { failure_reason: plan.reason });
    return;
  }
  const { maxFeePerGas, maxPriorityFeePerGas } = plan;
  const bump = plan.kind === 'bump';
  const nonce = Number(m.claim_tx_nonce);
  const body = bump
    ? { to: old!.to!, data: old!.data, gasLimit: old!.gasLimit }
    : { to: sender!.signer.address, data: '0x', gasLimit: SELF_TRANSFER_GAS };
  const signed = await sender!.signer.signTransaction({
    chainId: ctx.destination.chainId,
    nonce,
    value: 0n,
    maxFeePerGas,
    maxPriorityFeePerGas,
    ...body,
  });
  const hash = transactionHash(signed);
  try {
    await sender!.broadcast(signed);
  } catch (err) {
    // The nonce was used meanwhile (a version got mined): the next iteration resolves it.
    if (/nonce too low|NONCE_EXPIRED/i.test(`${(err as Error).message} ${(err as { code?: string }).code}`)) return;
    throw err;
  }
  const patch = {
    claim_tx_hash: hash,
    claim_tx_raw: signed,
    claim_max_fee_per_gas: maxFeePerGas.toString(),
    claim_max_priority_fee_per_gas: maxPriorityFeePerGas.toString(),
    claim_tx_kind: plan.kind === 'bump' ? ('claim' as const) : ('cancel' as const),
    failure_reason: plan.reason,
  };
  if (await ctx.repo.replaceClaimTx(m.id, m.claim_tx_hash!, patch, { bump })) {
    ctx.metrics.replacements.inc({ direction: ctx.direction, kind: bump ? 'bump' : 'cancel' });
    ctx.logger.warn(
      {
        message: m.message_hash,
        nonce,
        signer: sender!.signer.address,
        previous: m.claim_tx_hash,
        tx: hash,
        maxFeePerGas: maxFeePerGas.toString(),
      },
      bump ? 'claim fee bumped' : 'claim cancelled',
    );
  }
}
