import { Status, type MessageStatus } from '../message/status.js';
import { ABANDONABLE, IN_CLAIMING, RETRYABLE, retryTarget } from '../message/transitions.js';
import type { MessagePatch, MessageRow, RelayerRepository } from './repository.js';
import { CLEARED_CLAIM } from './rows.js';

/** The actor of every operator action in the history (API and `l2stack relayer requeue` alike). */
export const ADMIN_ACTOR = 'admin';

/** A fresh start: no claim transaction, no counted submissions, cycles, bumps or re-simulations. */
const RESET: MessagePatch = {
  ...CLEARED_CLAIM,
  claim_gas_limit: null,
  claim_max_fee_per_gas: null,
  claim_max_priority_fee_per_gas: null,
  claim_tx_kind: 'claim',
  claim_signer: null,
  retries: 0,
  cycles: 0,
  bumps: 0,
  resimulations: 0,
  retry_after: null,
  is_sponsored: false,
};
const NO_PROOF: MessagePatch = { merkle_root: null, leaf_index: null, proof: null, anchored_at: null };

export type AdminOutcome =
  | { kind: 'changed'; from: MessageStatus; to: MessageStatus }
  | { kind: 'unchanged'; status: MessageStatus }
  | { kind: 'refused'; status: MessageStatus };

export type AdminAction = 'retry' | 'abandon';

interface Plan {
  to: MessageStatus;
  patch: MessagePatch;
  reason: string;
}

/** What `action` does to a message in `m.status`: a move, nothing (already there) or a refusal. */
function planAction(action: AdminAction, m: MessageRow, reasonPrefix: string): Plan | AdminOutcome {
  const was = `was ${m.status}${m.failure_reason ? `: ${m.failure_reason}` : ''}`;
  if (action === 'retry') {
    if (IN_CLAIMING.includes(m.status)) return { kind: 'unchanged', status: m.status };
    if (!RETRYABLE.includes(m.status)) return { kind: 'refused', status: m.status };
    const patch = m.direction === 'L2_TO_L1' ? { ...RESET, ...NO_PROOF } : RESET;
    return { to: retryTarget(m.direction), patch, reason: `${reasonPrefix} (${was})` };
  }
  if (m.status === Status.ABANDONED) return { kind: 'unchanged', status: m.status };
  if (!ABANDONABLE.includes(m.status)) return { kind: 'refused', status: m.status };
  return { to: Status.ABANDONED, patch: { retry_after: null }, reason: `${reasonPrefix} (${was})` };
}

/**
 * The operators' one way to act on a message (the API's retry and abandon, `l2stack relayer requeue`): one
 * status transition through the transition table, recorded in the history with `actor` in the same
 * transaction. It is a plain database write, so whichever relayer instance (or CLI) makes it, the instance
 * leading the direction sees it through its change feed. A message that moved meanwhile (a running relayer got
 * there first) is read again and judged by its new status.
 */
export async function applyAdminAction(
  repo: RelayerRepository,
  action: AdminAction,
  message: MessageRow,
  options: { actor?: string; reason?: string } = {},
): Promise<AdminOutcome> {
  let m = message;
  const prefix = options.reason ?? `${action} by admin`;
  for (let attempt = 0; attempt < 5; attempt++) {
    const plan = planAction(action, m, prefix);
    if ('kind' in plan) return plan;
    const actor = options.actor ?? ADMIN_ACTOR;
    const moved = await repo.write(
      'relayer.admin_transition',
      (knex) => repo.transitionIn(knex, m.id, [m.status], plan.to, plan.patch, plan.reason, { actor }),
      [plan.to],
    );
    if (moved) return { kind: 'changed', from: m.status, to: plan.to };
    const [fresh] = (await repo.findByHash(m.message_hash, m.direction)) as [MessageRow | undefined];
    if (!fresh) throw new Error(`message ${m.message_hash} (${m.direction}) disappeared during ${action}`);
    m = fresh;
  }
  throw new Error(`message ${m.message_hash} (${m.direction}) kept changing status; ${action} not applied`);
}
