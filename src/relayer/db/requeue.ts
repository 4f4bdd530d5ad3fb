import type { Direction } from '../config.js';
import type { MessageStatus } from './migrations.js';
import type { MessageRow, RelayerRepository } from './repository.js';

/**
 * Statuses an operator may put back into the pipeline: the ones the relayer never leaves by itself.
 * FEE_UNDERPRICED is retried every RETRY_DELAY_IN_SECONDS anyway; EXCLUDED is the operator's own filter.
 */
export const REQUEUEABLE = ['NEEDS_MANUAL_INTERVENTION', 'NON_EXECUTABLE', 'CLAIMED_REVERTED', 'ZERO_FEE'] as const satisfies readonly MessageStatus[];
export type RequeueableStatus = (typeof REQUEUEABLE)[number];

/**
 * Where a requeued message restarts: the anchoring check of its direction, so whatever may have changed
 * since it stopped (claimed by someone else, a reorg, a new finalization) is looked at again before any
 * claim is sent. L1→L2: TRANSACTION_SIZE_COMPUTED (L2's inbox is asked); L2→L1: SENT (the proof is rebuilt).
 */
export const requeueTarget = (d: Direction): MessageStatus => (d === 'L1_TO_L2' ? 'TRANSACTION_SIZE_COMPUTED' : 'SENT');

export interface Requeued {
  hash: string;
  direction: Direction;
  from: MessageStatus;
  to: MessageStatus;
  retries: number;
}

export interface RequeueOutcome {
  requeued: Requeued[];
  /** Messages the hash named that are in a status that cannot be requeued. */
  refused: { hash: string; direction: Direction; status: MessageStatus }[];
}

/** A fresh start: no claim transaction, no counted submissions, cycles or bumps. */
const RESET = {
  claim_tx_hash: null, claim_tx_nonce: null, claim_tx_raw: null, claim_tx_created_at: null, claim_gas_limit: null,
  claim_max_fee_per_gas: null, claim_max_priority_fee_per_gas: null, claim_tx_kind: 'claim' as const,
  retries: 0, cycles: 0, bumps: 0, retry_after: null, is_sponsored: false,
};

/**
 * `l2stack relayer requeue`: moves the selected messages back into the pipeline with their counters
 * reset, each change recorded in the status history with the reason. Only a message still in the status
 * it was read in moves, so a running relayer (or a second operator) never races it.
 */
export async function requeueMessages(repo: RelayerRepository, select: { hash?: string; status?: RequeueableStatus; direction?: Direction }): Promise<RequeueOutcome> {
  const rows = await repo.db.run((knex) => {
    const q = repo.t(knex, 'message');
    if (select.hash !== undefined) q.where({ message_hash: select.hash.toLowerCase() });
    if (select.status !== undefined) q.where({ status: select.status });
    if (select.direction !== undefined) q.where({ direction: select.direction });
    return q.orderBy([{ column: 'direction' }, { column: 'sent_block_number' }, { column: 'message_nonce' }]).select<MessageRow[]>('*');
  });
  const outcome: RequeueOutcome = { requeued: [], refused: [] };
  for (const m of rows) {
    if (!(REQUEUEABLE as readonly string[]).includes(m.status)) {
      outcome.refused.push({ hash: m.message_hash, direction: m.direction, status: m.status });
      continue;
    }
    const to = requeueTarget(m.direction);
    const proof = m.direction === 'L2_TO_L1' ? { merkle_root: null, leaf_index: null, proof: null, anchored_at: null } : {};
    const reason = `requeued by operator (was ${m.status}${m.failure_reason ? `: ${m.failure_reason}` : ''})`;
    // Not repo.transition: its history skips a repeated status, and a requeue is always worth a line.
    const moved = await repo.db.run((knex) =>
      knex.transaction(async (trx) => {
        const n = await repo.t(trx, 'message').where({ id: m.id, status: m.status }).update({ ...RESET, ...proof, status: to, failure_reason: reason, updated_at: trx.fn.now() }, ['id']);
        if (n.length > 0) await repo.t(trx, 'message_status_history').insert({ message_id: m.id, status: to, reason });
        return n.length > 0;
      }),
    );
    if (moved) {
      outcome.requeued.push({ hash: m.message_hash, direction: m.direction, from: m.status, to, retries: m.retries });
    }
  }
  return outcome;
}
