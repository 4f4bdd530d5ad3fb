import type { Knex } from 'knex';
import type { MessagePatch, NewMessage } from '../db/rows.js';
import type { MessageStatus } from './status.js';
import { isAllowed } from './transitions.js';

/**
 * The one writer of a message's status and of its history: applyTransition moves messages along the transition table
 * (transitions.ts), enterMessages stores new ones in an entry status. The repository (db/repository.ts) calls them
 * inside its writes, which wake the pipeline stage waiting for the statuses entered.
 */

/** SQL types of the message columns a status change may set (bound values are cast to them). */
const COLUMN_TYPES: Record<string, string> = {
  failure_reason: 'text',
  claim_tx_hash: 'text',
  claim_tx_nonce: 'bigint',
  claim_gas_limit: 'numeric',
  claim_max_fee_per_gas: 'numeric',
  claim_max_priority_fee_per_gas: 'numeric',
  claim_tx_raw: 'text',
  claim_tx_created_at: 'timestamptz',
  claim_tx_kind: 'text',
  claim_signer: 'text',
  is_sponsored: 'boolean',
  retries: 'integer',
  cycles: 'integer',
  bumps: 'integer',
  retry_after: 'timestamptz',
  resimulations: 'integer',
  compressed_transaction_size: 'integer',
  merkle_root: 'text',
  leaf_index: 'integer',
  proof: 'jsonb',
  anchored_at: 'timestamptz',
  claimed_at: 'timestamptz',
  sent_block_number: 'bigint',
  sent_tx_hash: 'text',
  sent_log_index: 'integer',
};

export interface StatusChange {
  id: string;
  patch?: MessagePatch;
  /** The reason of this message (else the batch's). */
  reason?: string | null;
}

export interface StatusChangeOptions {
  /** This change is a claim submission: retries + 1 and claim_tx_created_at = now(). */
  submission?: boolean;
  /** Who moves the message, for its history: the relayer instance (RelayerRepository.actor) or `admin`. */
  actor?: string;
}

/** Thrown for a move TRANSITIONS does not list: a bug in the caller, nothing is written. */
export class TransitionNotAllowedError extends Error {
  constructor(
    readonly from: MessageStatus,
    readonly to: MessageStatus,
  ) {
    super(`status transition ${from} → ${to} is not in the relayer's transition table`);
    this.name = 'TransitionNotAllowedError';
  }
}

/**
 * The one way a message's status is written. One statement moves every listed message still in one of `from` to `to`
 * with its own patch and, in the same statement (so the same transaction), records the history line of each that
 * changed status: from, to, reason, the claim transaction (hash, nonce, signer) the row holds after the move (or held
 * before it, when the move cleared it), and the actor (re-evaluations that keep the status are not new lines). Rows are
 * locked (FOR UPDATE) before their status is compared, so two workers never both move a message. Returns the ids moved.
 */
export async function applyTransition(
  knex: Knex,
  schema: string,
  changes: readonly StatusChange[],
  from: readonly MessageStatus[],
  to: MessageStatus,
  reason: string | null,
  options: StatusChangeOptions = {},
): Promise<Set<string>> {
  for (const f of from) if (!isAllowed(f, to)) throw new TransitionNotAllowedError(f, to);
  const moved = new Set<string>();
  if (changes.length === 0) return moved;
  // Messages with the same patch columns go in one statement: a batch normally has one shape.
  const shapes = new Map<string, StatusChange[]>();
  for (const c of changes) {
    // failure_reason is the change's reason, never a patch column (as it always was).
    const key = Object.keys(c.patch ?? {})
      .filter((k) => k !== 'failure_reason')
      .sort()
      .join(',');
    shapes.set(key, [...(shapes.get(key) ?? []), c]);
  }
  for (const [key, group] of shapes) {
    const columns = key === '' ? [] : key.split(',');
    for (const col of columns) if (!COLUMN_TYPES[col]) throw new Error(`status change cannot set column ${col}`);
    const bindings: unknown[] = [];
    const rows = group.map((c) => {
      bindings.push(c.id, c.reason === undefined ? reason : c.reason);
      for (const col of columns) {
        const v = (c.patch as Record<string, unknown>)[col];
        bindings.push(col === 'proof' && v !== null && v !== undefined ? JSON.stringify(v) : (v ?? null));
      }
      return `(?::bigint, ?::text${columns.map((col) => `, ?::${COLUMN_TYPES[col]}`).join('')})`;
    });
    const m = `"${schema}"."message"`;
    const h = `"${schema}"."message_status_history"`;
    const sets = [
      `status = ?`,
      `failure_reason = v.reason`,
      `updated_at = now()`,
      ...columns.map((col) => `"${col}" = v."${col}"`),
    ];
    if (options.submission) sets.push('retries = m.retries + 1', 'claim_tx_created_at = now()');
    const inFrom = `in (${from.map(() => '?').join(', ')})`;
    const sql =
      `with v(id, reason${columns.map((c) => `, "${c}"`).join('')}) as (values ${rows.join(', ')}), ` +
      `old as (select m0.id, m0.status, m0.claim_tx_hash, m0.claim_tx_nonce, m0.claim_signer from ${m} m0 join v on v.id = m0.id where m0.status ${inFrom} for update of m0), ` +
      `upd as (update ${m} m set ${sets.join(', ')} from old join v on v.id = old.id where m.id = old.id and m.status ${inFrom} ` +
      // The claim transaction the move concerns: the row's after it, or the one it cleared (a cycle's end, a retry).
      `returning m.id, old.status as old_status, v.reason, coalesce(m.claim_tx_hash, old.claim_tx_hash) as claim_tx_hash, ` +
      `coalesce(m.claim_tx_nonce, old.claim_tx_nonce) as claim_tx_nonce, coalesce(m.claim_signer, old.claim_signer) as claim_signer), ` +
      `hist as (insert into ${h} (message_id, from_status, status, reason, claim_tx_hash, claim_tx_nonce, signer, actor) ` +
      `select id, old_status, ?, reason, claim_tx_hash, claim_tx_nonce, claim_signer, ? from upd where old_status <> ?) ` +
      `select id from upd`;
    const actor = options.actor ?? null;
    const result = (await knex.raw(sql, [...bindings, ...from, to, ...from, to, actor, to] as Knex.RawBinding[])) as {
      rows: { id: string | number }[];
    };
    for (const r of result.rows) moved.add(String(r.id));
  }
  return moved;
}

/** Rows per INSERT of new messages: 2,000 × 14 columns stays well under PostgreSQL's 65,535 bind parameters. */
const MESSAGES_PER_INSERT = 2_000;

/**
 * Stores new messages in their entry status with the first line of each one's history (from null), in the caller's
 * transaction. Known (hash, direction) pairs are left untouched and get no line. Returns how many were new.
 */
export async function enterMessages(
  trx: Knex,
  schema: string,
  messages: readonly NewMessage[],
  actor: string,
): Promise<number> {
  let inserted = 0;
  // In chunks, in the one transaction: a PostgreSQL statement takes at most 65,535 bind parameters, and a log window of
  // ~4,700 messages (14 columns each) in one INSERT was refused, retried forever.
  for (let at = 0; at < messages.length; at += MESSAGES_PER_INSERT) {
    const rows = (await trx(`${schema}.message`)
      .insert(messages.slice(at, at + MESSAGES_PER_INSERT))
      .onConflict(['message_hash', 'direction'])
      .ignore()
      .returning(['id', 'status', 'failure_reason'])) as {
      id: string;
      status: MessageStatus;
      failure_reason: string | null;
    }[];
    if (rows.length > 0) {
      await trx(`${schema}.message_status_history`).insert(
        rows.map((r) => ({ message_id: r.id, from_status: null, status: r.status, reason: r.failure_reason, actor })),
      );
    }
    inserted += rows.length;
  }
  return inserted;
}
