import type { Direction } from '../config.js';
import type { MessageStatus } from '../message/status.js';
import type { MessageRow, RelayerRepository } from './repository.js';
import { REQUEUEABLE } from '../message/transitions.js';
import { applyAdminAction } from './admin.js';

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

/**
 * `l2stack relayer requeue`: moves the selected messages back into the pipeline with their counters reset, each change
 * recorded in the status history with the reason and actor admin: a client of the API's retry (applyAdminAction). Only
 * a message still in the status it was read in moves, so a running relayer (or a second operator) never races it.
 */
export async function requeueMessages(
  repo: RelayerRepository,
  select: { hash?: string; status?: MessageStatus; direction?: Direction },
): Promise<RequeueOutcome> {
  const rows = await repo.read('relayer.requeue', (knex) => {
    const q = repo.table(knex, 'message');
    if (select.hash !== undefined) q.where({ message_hash: select.hash.toLowerCase() });
    if (select.status !== undefined) q.where({ status: select.status });
    if (select.direction !== undefined) q.where({ direction: select.direction });
    return q
      .orderBy([{ column: 'direction' }, { column: 'sent_block_number' }, { column: 'message_nonce' }])
      .select<MessageRow[]>('*');
  });
  const outcome: RequeueOutcome = { requeued: [], refused: [] };
  for (const m of rows) {
    if (!REQUEUEABLE.includes(m.status)) {
      outcome.refused.push({ hash: m.message_hash, direction: m.direction, status: m.status });
      continue;
    }
    // The API's retry, the same function: same reset, same transition, actor admin in the history.
    const done = await applyAdminAction(repo, 'retry', m, { reason: 'requeued by operator' });
    if (done.kind === 'changed')
      outcome.requeued.push({
        hash: m.message_hash,
        direction: m.direction,
        from: m.status,
        to: done.to,
        retries: m.retries,
      });
  }
  return outcome;
}
