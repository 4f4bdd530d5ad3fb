import { Status } from '../message/status.js';
import { deflateRawSync } from 'node:zlib';
import { serializeSigned, type Eip1559Signature } from '../../common/eth/eip1559.js';
import { bytesToHex } from '../../common/eth/hex.js';
import { keccak256 } from '../../common/eth/keccak.js';
import { toEip1559Fields } from '../signer.js';
import { encodeClaimMessage, inboxStatuses } from '../claim/facts.js';
import type { MessageRow } from '../db/repository.js';
import type { StatusChange } from '../message/writer.js';
import { claimTarget, duePage, type DirectionContext } from './context.js';
import { locateSource, markReorged } from './reorg.js';

/**
 * L1→L2, SENT → TRANSACTION_SIZE_COMPUTED: the compressed size of the signed claim transaction (what an L2 fee model
 * charges for). Computed before anchoring because it needs no chain state: the claim is signed with placeholder nonce
 * and gas and compressed with DEFLATE, a stand-in for the chain's compressor.
 */
export function createSizeProcessor(ctx: DirectionContext) {
  return async function tick(): Promise<boolean> {
    const rows = await duePage(ctx, [Status.SENT]);
    const changes = rows.map((m) => ({
      id: m.id,
      patch: { compressed_transaction_size: compressedClaimSize(ctx, m) },
    }));
    await ctx.repo.transitionMany(changes, [Status.SENT], Status.TRANSACTION_SIZE_COMPUTED);
    return rows.length === ctx.config.maxFetchMessagesFromDb;
  };
}

/**
 * A signature's 65 bytes are incompressible whoever signs, so a fixed stand-in of that kind measures the same as a real
 * one: no signing (nor a remote signer's round trip) per message. r and s are the keccaks of two fixed strings (s with
 * its top four bits cleared, so it is a low s), parity 0: the same bytes the sizes were always computed with.
 */
const PLACEHOLDER_SIGNATURE: Eip1559Signature = {
  yParity: 0,
  r: BigInt(bytesToHex(keccak256(Buffer.from('claim size r', 'utf8')))),
  s: BigInt(bytesToHex(keccak256(Buffer.from('claim size s', 'utf8')))) & ((1n << 252n) - 1n),
};

/** What a claim's size depends on: the destination, the claim-via address and the fee recipient. */
type SizeContext = Pick<DirectionContext, 'destination' | 'destinationConfig' | 'sender'>;

/** The claim transaction, signed with placeholder nonce, gas and signature: what compressedClaimSize measures. */
export function placeholderSignedClaim(ctx: SizeContext, m: MessageRow): Uint8Array {
  const fields = toEip1559Fields({
    chainId: ctx.destination.chainId,
    nonce: 0,
    to: claimTarget(ctx),
    data: encodeClaimMessage(ctx, m),
    value: 0n,
    gasLimit: 200_000n,
    maxFeePerGas: 1_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
  });
  return serializeSigned(fields, PLACEHOLDER_SIGNATURE);
}

/** The compressed size of the claim transaction, signed with placeholder nonce, gas and signature. */
export const compressedClaimSize = (ctx: SizeContext, m: MessageRow): number =>
  deflateRawSync(placeholderSignedClaim(ctx, m), { level: 9 }).length;

/**
 * The L2 status of the page's messages. L2 anchors L1 messages in the order of their numbers (the page's order), so
 * while the oldest is not anchored none after it is: that one call stands for the page, and the cost of waiting for the
 * coordinator is one call per iteration, not one per waiting message (40 messages cost 159 eth_calls in CI's
 * cost-per-claim run when the relayer reached them before the coordinator).
 */
async function pageStatuses(
  ctx: Pick<DirectionContext, 'destination'>,
  rows: readonly MessageRow[],
): Promise<PromiseSettledResult<number>[]> {
  const [first, ...others] = rows.map((m) => m.message_hash);
  if (first === undefined) return [];
  const [oldest] = await inboxStatuses(ctx, [first]);
  if (oldest!.status === 'rejected' || oldest!.value === 0) return [oldest!];
  return [oldest!, ...(await inboxStatuses(ctx, others))];
}

/**
 * L1→L2, TRANSACTION_SIZE_COMPUTED → ANCHORED when L2 lists the hash as claimable, or CLAIMED_SUCCESS (no transaction)
 * when it was already claimed. One lookup failing does not hold back the others; the oldest message not anchored yet
 * holds back the lookups of the rest (statuses). A message L2 does not know has its source on L1 looked up at most once
 * per RETRY_DELAY_IN_SECONDS: if a reorg deeper than L1_LISTENER_BLOCK_CONFIRMATION removed it, it becomes
 * NON_EXECUTABLE instead of waiting forever for an anchoring that cannot come.
 */
export function createL1L2AnchoringProcessor(ctx: DirectionContext) {
  const lastSourceCheck = new Map<string, number>();
  const recheckMs = ctx.config.claiming.retryDelaySeconds * 1_000;

  async function checkSource(m: MessageRow): Promise<void> {
    const now = Date.now();
    const last = lastSourceCheck.get(m.id);
    if (last !== undefined && now - last < recheckMs) return;
    lastSourceCheck.set(m.id, now);
    // The first time L2 does not know it is the normal case (the anchoring is still to come): look later.
    if (last === undefined) return;
    if ((await locateSource(ctx, m)).found !== false) return;
    lastSourceCheck.delete(m.id);
    await markReorged(ctx, m, Status.TRANSACTION_SIZE_COMPUTED, 'L2 has not anchored the message');
  }

  return async function tick(): Promise<boolean> {
    const rows = await duePage(ctx, [Status.TRANSACTION_SIZE_COMPUTED]);
    const results = await pageStatuses(ctx, rows);
    let firstError: unknown;
    const now = new Date();
    const anchored: StatusChange[] = [];
    const claimed: StatusChange[] = [];
    for (const [i, r] of results.entries()) {
      const m = rows[i]!;
      if (r.status === 'rejected') {
        firstError ??= r.reason;
        continue;
      }
      if (r.value === 0) {
        await checkSource(m).catch((err: unknown) => void (firstError ??= err));
        continue;
      }
      lastSourceCheck.delete(m.id);
      if (r.value === 1) anchored.push({ id: m.id, patch: { anchored_at: now } });
      else if (r.value === 2) claimed.push({ id: m.id, patch: { claimed_at: now } });
    }
    // One statement per outcome for the whole tick.
    await ctx.repo.transitionMany(anchored, [Status.TRANSACTION_SIZE_COMPUTED], Status.ANCHORED);
    await ctx.repo.transitionMany(
      claimed,
      [Status.TRANSACTION_SIZE_COMPUTED],
      Status.CLAIMED_SUCCESS,
      'already claimed on L2; no transaction sent',
    );
    if (firstError) throw firstError;
    return false;
  };
}
