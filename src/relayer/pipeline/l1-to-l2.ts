import { deflateRawSync } from 'node:zlib';
import { getBytes, ZeroAddress } from 'ethers';
import type { MessageRow } from '../db/repository.js';
import type { DirectionContext } from './context.js';

/** claimMessage(from, to, fee, value, feeRecipient, calldata, nonce) on L2; fee to the claimer. */
export function encodeClaimMessage(ctx: Pick<DirectionContext, 'destination'>, m: MessageRow): string {
  return ctx.destination.iface.encodeFunctionData('claimMessage', [m.message_sender, m.destination, m.fee, m.value, ZeroAddress, m.calldata, m.message_nonce]);
}

/**
 * L1→L2, SENT → TRANSACTION_SIZE_COMPUTED: the compressed size of the signed claim transaction (what an
 * L2 fee model charges for). Computed before anchoring because it needs no chain state: the claim is
 * signed with placeholder nonce and gas and compressed with DEFLATE, a stand-in for the chain's compressor.
 */
export function createSizeProcessor(ctx: DirectionContext) {
  return async function tick(): Promise<boolean> {
    const rows = await ctx.repo.due(ctx.direction, ['SENT'], ctx.config.maxFetchMessagesFromDb);
    for (const m of rows) {
      const signed = await ctx.sender.signer.signTransaction({
        chainId: ctx.destination.chainId,
        nonce: 0,
        to: ctx.destination.contract,
        data: encodeClaimMessage(ctx, m),
        value: 0n,
        gasLimit: 200_000n,
        maxFeePerGas: 1_000_000_000n,
        maxPriorityFeePerGas: 1_000_000_000n,
      });
      const size = deflateRawSync(getBytes(signed), { level: 9 }).length;
      await ctx.repo.transition(m.id, ['SENT'], 'TRANSACTION_SIZE_COMPUTED', { compressed_transaction_size: size });
    }
    return rows.length === ctx.config.maxFetchMessagesFromDb;
  };
}

/** inboxL1L2MessageStatus on L2: 0 unknown, 1 claimable, 2 claimed. */
export async function inboxStatus(ctx: Pick<DirectionContext, 'destination'>, hash: string): Promise<number> {
  const iface = ctx.destination.iface;
  const data = await ctx.destination.provider.call({ to: ctx.destination.contract, data: iface.encodeFunctionData('inboxL1L2MessageStatus', [hash]) });
  return Number(iface.decodeFunctionResult('inboxL1L2MessageStatus', data)[0]);
}

/**
 * L1→L2, TRANSACTION_SIZE_COMPUTED → ANCHORED when L2 lists the hash as claimable, or CLAIMED_SUCCESS
 * (no transaction) when it was already claimed. One lookup failing does not hold back the others.
 */
export function createL1L2AnchoringProcessor(ctx: DirectionContext) {
  return async function tick(): Promise<boolean> {
    const rows = await ctx.repo.due(ctx.direction, ['TRANSACTION_SIZE_COMPUTED'], ctx.config.maxFetchMessagesFromDb);
    const results = await Promise.allSettled(rows.map((m) => inboxStatus(ctx, m.message_hash)));
    let firstError: unknown;
    for (const [i, r] of results.entries()) {
      const m = rows[i]!;
      if (r.status === 'rejected') {
        firstError ??= r.reason;
        continue;
      }
      if (r.value === 1) await ctx.repo.transition(m.id, ['TRANSACTION_SIZE_COMPUTED'], 'ANCHORED', { anchored_at: new Date() });
      else if (r.value === 2) {
        await ctx.repo.transition(m.id, ['TRANSACTION_SIZE_COMPUTED'], 'CLAIMED_SUCCESS', { claimed_at: new Date() }, 'already claimed on L2; no transaction sent');
      }
    }
    if (firstError) throw firstError;
    return false;
  };
}
