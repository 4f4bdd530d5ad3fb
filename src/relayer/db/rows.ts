import type { Direction } from '../config.js';
import type { MessageStatus } from '../message/status.js';
import type { ENTRY_STATUSES } from '../message/transitions.js';

/**
 * The shapes of the relayer's rows, at the bottom of its database layer: the transition table, the change feed
 * and the repository all speak them, and none of them needs another to do so.
 */

/** A stored message as read from the database (numeric and int8 columns arrive as strings). */
export interface MessageRow {
  id: string;
  message_hash: string;
  direction: Direction;
  message_sender: string;
  destination: string;
  fee: string;
  value: string;
  message_nonce: string;
  calldata: string;
  contract_address: string;
  sent_block_number: string;
  sent_tx_hash: string;
  sent_log_index: number;
  status: MessageStatus;
  failure_reason: string | null;
  claim_tx_hash: string | null;
  claim_tx_nonce: string | null;
  claim_gas_limit: string | null;
  claim_max_fee_per_gas: string | null;
  claim_max_priority_fee_per_gas: string | null;
  claim_tx_raw: string | null;
  claim_tx_created_at: Date | null;
  is_sponsored: boolean;
  retries: number;
  cycles: number;
  /** Fee bumps sent in the current cycle. */
  bumps: number;
  /** What claim_tx_* holds: the claim, or the cancellation ending the current cycle. */
  claim_tx_kind: 'claim' | 'cancel';
  /** Lower-case address of the signer that sent claim_tx_*; null on rows from before 0003: the primary signer. */
  claim_signer: string | null;
  retry_after: Date | null;
  /** Re-simulations of a NON_EXECUTABLE claim so far (its backoff doubles with each); 0 once it moves on. */
  resimulations: number;
  compressed_transaction_size: number | null;
  merkle_root: string | null;
  leaf_index: number | null;
  proof: string[] | null;
  anchored_at: Date | null;
  claimed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A message as the listener stores it: the event's fields, in one of the entry statuses. */
export type NewMessage = Pick<
  MessageRow,
  | 'message_hash'
  | 'direction'
  | 'message_sender'
  | 'destination'
  | 'fee'
  | 'value'
  | 'message_nonce'
  | 'calldata'
  | 'contract_address'
> &
  Pick<MessageRow, 'sent_tx_hash' | 'sent_log_index' | 'failure_reason'> & {
    sent_block_number: number;
    status: (typeof ENTRY_STATUSES)[number];
  };

export interface FinalizationRow {
  id: string;
  contract_address: string;
  l1_tx_hash: string;
  l1_block_number: string;
  first_l2_block: string;
  final_l2_block: string;
  tree_depth: number | null;
  merkle_roots: string[];
  messaging_blocks: number[];
  leaves: string[] | null;
}

/** One line of a message's status history (migration 0006 added from_status to actor; older lines hold nulls). */
export interface HistoryRow {
  message_id: string;
  from_status: MessageStatus | null;
  status: MessageStatus;
  at: Date;
  reason: string | null;
  claim_tx_hash: string | null;
  claim_tx_nonce: string | null;
  signer: string | null;
  actor: string | null;
}

/** Columns a status transition may set besides status, failure_reason and updated_at. */
export type MessagePatch = Partial<Omit<MessageRow, 'id' | 'status' | 'created_at' | 'updated_at' | 'proof'>> & {
  proof?: string[] | null;
};

/** What a row's claim transaction is cleared to when its message leaves PENDING without a claim. */
export const CLEARED_CLAIM = {
  claim_tx_hash: null,
  claim_tx_nonce: null,
  claim_tx_raw: null,
  claim_tx_created_at: null,
} as const satisfies MessagePatch;
