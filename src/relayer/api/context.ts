import type { Registry } from 'prom-client';
import type { DbClient } from '../../common/db/client.js';
import type { Direction } from '../config.js';
import type { MessageRow, RelayerRepository } from '../db/repository.js';
import type { MessageStatus } from '../db/migrations.js';
import type { Check } from '../../common/http/operator.js';

export type { Check };

export interface ApiContext {
  repo: RelayerRepository;
  db: DbClient;
  registry: Registry;
  /** The readiness checks, in the spec's fixed order. */
  readiness(): Promise<Check[]>;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
const int = (v: string | null) => (v === null ? null : Number(v));

/** A stored row as the spec's MessageRecord (decimal strings, lower-case hex, ISO timestamps). */
export function toRecord(m: MessageRow, history: { status: MessageStatus; at: Date; reason: string | null }[]) {
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
