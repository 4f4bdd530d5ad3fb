import type { Registry } from 'prom-client';
import type { DbClient } from '../../common/db/client.js';
import type { Direction } from '../config.js';
import type { HistoryRow, MessageRow, RelayerRepository } from '../db/repository.js';
import type { operations } from '../../../generated/relayer-api/schema.js';
import type { OperationHandler } from '../../common/http/app.js';
import { HttpError, notFound } from '../../common/errors.js';
import { applyAdminAction, type AdminAction } from '../db/admin.js';
import type { MessageStatus } from '../message/status.js';
import type { Check } from '../../common/http/operator.js';

export interface ApiContext {
  repo: RelayerRepository;
  db: DbClient;
  registry: Registry;
  /** The readiness checks, in the spec's fixed order. */
  readiness(): Promise<Check[]>;
}

const conflict = (detail: string) => new HttpError(409, 'Conflict', detail);
const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
const int = (v: string | null) => (v === null ? null : Number(v));

/** A stored row as the spec's MessageRecord (decimal strings, lower-case hex, ISO timestamps). */
export function toRecord(
  m: MessageRow,
  history: readonly { status: MessageStatus; at: Date; reason: string | null }[],
) {
  return {
    messageHash: m.message_hash,
    direction: m.direction as Direction,
    messageSender: m.message_sender,
    destination: m.destination,
    fee: m.fee,
    value: m.value,
    messageNonce: m.message_nonce,
    calldata: m.calldata,
    contractAddress: m.contract_address,
    sentBlockNumber: Number(m.sent_block_number),
    status: m.status,
    claimTxHash: m.claim_tx_hash,
    claimTxNonce: int(m.claim_tx_nonce),
    claimGasLimit: m.claim_gas_limit,
    claimMaxFeePerGas: m.claim_max_fee_per_gas,
    claimMaxPriorityFeePerGas: m.claim_max_priority_fee_per_gas,
    retries: m.retries,
    cycles: m.cycles,
    compressedTransactionSize: m.compressed_transaction_size,
    failureReason: m.failure_reason,
    createdAt: iso(m.created_at)!,
    updatedAt: iso(m.updated_at)!,
    history: history.map((h) => ({ status: h.status, at: iso(h.at)!, reason: h.reason })),
  };
}

/** A history line as the spec's HistoryEntry. */
export const toHistoryEntry = (h: HistoryRow) => ({
  from: h.from_status,
  to: h.status,
  reason: h.reason,
  claimTxHash: h.claim_tx_hash,
  claimTxNonce: int(h.claim_tx_nonce),
  signer: h.signer,
  actor: h.actor,
  at: iso(h.at)!,
});

/** The one record a hash (and optional direction) names: 404 when none, 409 when both directions hold it. */
export async function findOne(
  ctx: ApiContext,
  messageHash: string,
  direction: Direction | undefined,
): Promise<MessageRow> {
  const hash = messageHash.toLowerCase();
  const rows = await ctx.repo.findByHash(hash, direction);
  if (rows.length === 0)
    throw notFound(direction ? `No ${direction} message with hash ${hash}` : `No message with hash ${hash}`);
  if (rows.length > 1)
    throw conflict(`Message ${hash} exists in both directions; add ?direction=L1_TO_L2 or ?direction=L2_TO_L1`);
  return rows[0]!;
}

type AdminOperation = operations['retryMessage'] | operations['abandonMessage'];

/**
 * The admin actions' handler (authenticated before it, by adminAuth): applies the action through the one
 * database function the CLI uses too, and answers the record as it now stands; 409 names the current status.
 */
export function adminActionHandler(ctx: ApiContext, action: AdminAction): OperationHandler<AdminOperation> {
  return async (req, res) => {
    const row = await findOne(ctx, req.params.messageHash, req.query.direction);
    const outcome = await applyAdminAction(ctx.repo, action, row);
    if (outcome.kind === 'refused')
      throw conflict(`cannot ${action} message ${row.message_hash} (${row.direction}) in status ${outcome.status}`);
    const [now] = await ctx.repo.findByHash(row.message_hash, row.direction);
    const history = (await ctx.repo.history([now!.id])).get(now!.id) ?? [];
    res.json({ action, changed: outcome.kind === 'changed', message: toRecord(now!, history) });
  };
}
