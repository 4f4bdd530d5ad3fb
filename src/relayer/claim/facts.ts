import { batchViewCalls } from '../batch-call.js';
import { describeRevert, isRevert } from '../chain.js';
import { encodeClaimMessageCall, encodeClaimMessageWithProofCall } from './calldata.js';
import type { MessageRow } from '../db/rows.js';
import type { GasEstimate } from './plan.js';
import { claimFeeRecipient, claimTarget, type DirectionContext } from '../pipeline/context.js';
import { cappedFees, type FeeEstimate } from '../pipeline/fees.js';

/** What the claiming loop (and the receipt and re-simulation loops) ask the destination chain about a claim. */

/** What both claims carry of the message (calldata.ts ClaimedMessage); the fee goes to the relayer. */
const claimedMessage = (ctx: Pick<DirectionContext, 'destinationConfig' | 'sender'>, m: MessageRow) => ({
  from: m.message_sender,
  to: m.destination,
  fee: m.fee,
  value: m.value,
  feeRecipient: claimFeeRecipient(ctx),
  calldata: m.calldata,
  nonce: m.message_nonce,
});

/** claimMessage(from, to, fee, value, feeRecipient, calldata, nonce) on L2. */
export const encodeClaimMessage = (ctx: Pick<DirectionContext, 'destinationConfig' | 'sender'>, m: MessageRow) =>
  encodeClaimMessageCall(claimedMessage(ctx, m));

/**
 * inboxL1L2MessageStatus on L2 (0 unknown, 1 claimable, 2 claimed) of many hashes, in JSON-RPC batches (one
 * request per hundred; one hash is one plain eth_call): each settles on its own.
 */
export async function inboxStatuses(
  ctx: Pick<DirectionContext, 'destination'>,
  hashes: readonly string[],
): Promise<PromiseSettledResult<number>[]> {
  const iface = ctx.destination.iface;
  const calls = hashes.map((hash) => ({
    to: ctx.destination.contract,
    data: iface.encodeFunctionData('inboxL1L2MessageStatus', [hash]),
  }));
  const answers = await batchViewCalls(ctx.destination.provider, calls);
  return answers.map((a): PromiseSettledResult<number> => {
    if (a.status === 'rejected') return a;
    try {
      return { status: 'fulfilled', value: Number(iface.decodeFunctionResult('inboxL1L2MessageStatus', a.value)[0]) };
    } catch (err) {
      return { status: 'rejected', reason: err };
    }
  });
}

/** The claim's calldata (hand-encoded, see calldata.ts). */
export function encodeClaim(ctx: DirectionContext, m: MessageRow): string {
  if (ctx.direction === 'L1_TO_L2') return encodeClaimMessage(ctx, m);
  if (m.proof === null || m.leaf_index === null || m.merkle_root === null) {
    throw new Error(`message ${m.message_hash} has no Merkle proof yet; it cannot be claimed on L1`);
  }
  return encodeClaimMessageWithProofCall({
    ...claimedMessage(ctx, m),
    proof: m.proof,
    leafIndex: m.leaf_index,
    merkleRoot: m.merkle_root,
  });
}

async function view(ctx: DirectionContext, fn: string, args: unknown[]): Promise<bigint | boolean> {
  const iface = ctx.destination.iface;
  const out = await ctx.destination.provider.call({
    to: ctx.destination.contract,
    data: iface.encodeFunctionData(fn, args),
  });
  return iface.decodeFunctionResult(fn, out)[0] as bigint | boolean;
}

/** Whether the message is already claimed on the destination (by us earlier, or by anyone). */
export async function isClaimedOnChain(ctx: DirectionContext, m: MessageRow): Promise<boolean> {
  if (ctx.direction === 'L1_TO_L2') {
    const [status] = await inboxStatuses(ctx, [m.message_hash]);
    if (status!.status === 'rejected') throw status!.reason;
    return status!.value === 2;
  }
  return (await view(ctx, 'isMessageClaimed', [m.message_nonce])) as boolean;
}

/** Room left in the L1 withdrawal rate limit, from the contract's public state at the latest block. */
export async function rateLimitRoom(ctx: DirectionContext): Promise<bigint> {
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
export interface SvcEstimateState {
  unavailable: boolean;
}

export async function estimateGas(
  ctx: DirectionContext,
  data: string,
  svc: SvcEstimateState,
): Promise<{ gas: bigint; fees?: FeeEstimate }> {
  const tx = { from: ctx.sender.signer.address, to: claimTarget(ctx), data };
  if (ctx.direction === 'L1_TO_L2' && ctx.config.enableSvcEstimateGas && !svc.unavailable) {
    try {
      const r = (await ctx.destination.provider.send('svc_estimateGas', [tx])) as {
        gasLimit: string;
        baseFeePerGas: string;
        priorityFeePerGas: string;
      };
      const tip = BigInt(r.priorityFeePerGas);
      const fees = cappedFees(BigInt(r.baseFeePerGas) + tip, tip, ctx.config.claiming.maxFeePerGasCap);
      return { gas: BigInt(r.gasLimit), fees };
    } catch (err) {
      if (!/-32601|not (exist|available|supported)|method not found/i.test(String((err as Error).message))) throw err;
      svc.unavailable = true;
      ctx.logger.warn(
        'ENABLE_SVC_ESTIMATE_GAS is true but the L2 node does not serve svc_estimateGas; using eth_estimateGas',
      );
    }
  }
  return { gas: await ctx.destination.provider.estimateGas(tx) };
}

/**
 * The claim's gas estimate, or the reason it reverts (decoded from the destination's errors). Anything but a
 * revert (a node down, a timeout) is thrown: it says nothing about the claim.
 */
export async function gasEstimate(ctx: DirectionContext, data: string, svc: SvcEstimateState): Promise<GasEstimate> {
  try {
    return await estimateGas(ctx, data, svc);
  } catch (err) {
    if (!isRevert(err)) throw err;
    return { revert: describeRevert(ctx.destination.iface, err) };
  }
}

/**
 * A claim-via address without code would take every claim as a plain successful call that claims nothing:
 * claiming waits (the loop logs the error) until code is found there. Checked until found once.
 */
export function createClaimViaCheck(ctx: DirectionContext): () => Promise<void> {
  let viaChecked = false;
  return async function checkClaimVia(): Promise<void> {
    const via = ctx.destinationConfig.claimViaAddress;
    if (via === undefined || viaChecked) return;
    if ((await ctx.destination.provider.getCode(via)) === '0x') {
      throw new Error(
        `${ctx.destination.name}_CLAIM_VIA_ADDRESS ${via} has no contract code on ${ctx.destination.name}; no claim is sent until it has`,
      );
    }
    viaChecked = true;
  };
}
