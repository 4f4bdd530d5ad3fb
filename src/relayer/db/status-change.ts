import type { Knex } from 'knex';
import type { MessageStatus } from './migrations.js';
import type { MessagePatch } from './repository.js';

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
}

/**
 * One statement that moves every listed message still in one of `from` to `to` with its own patch, and
 * records the history line of each that changed status (re-evaluations that keep the status are not new
 * lines). Rows are locked in the statement (FOR UPDATE) before their status is compared, so two workers
 * never both move a message. Returns the ids moved.
 */
export async function changeStatus(
  knex: Knex,
  schema: string,
  changes: readonly StatusChange[],
  from: readonly MessageStatus[],
  to: MessageStatus,
  reason: string | null,
  options: StatusChangeOptions = {},
): Promise<Set<string>> {
  const moved = new Set<string>();
  if (changes.length === 0) return moved;
  // Messages with the same patch columns go in one statement: a batch normally has one shape.
  const shapes = new Map<string, StatusChange[]>();
  for (const c of changes) {
    // failure_reason is the change's reason, never a patch column (as it always was).
    const key = Object.keys(c.patch ?? {}).filter((k) => k !== 'failure_reason').sort().join(',');
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
        bindings.push(col === 'proof' && v !== null && v !== undefined ? JSON.stringify(v) : v ?? null);
      }
      return `(?::bigint, ?::text${columns.map((col) => `, ?::${COLUMN_TYPES[col]}`).join('')})`;
    });
    const m = `"${schema}"."message"`;
    const h = `"${schema}"."message_status_history"`;
    const sets = [`status = ?`, `failure_reason = v.reason`, `updated_at = now()`, ...columns.map((col) => `"${col}" = v."${col}"`)];
    if (options.submission) sets.push('retries = m.retries + 1', 'claim_tx_created_at = now()');
    const inFrom = `in (${from.map(() => '?').join(', ')})`;
    const sql =
      `with v(id, reason${columns.map((c) => `, "${c}"`).join('')}) as (values ${rows.join(', ')}), ` +
      `old as (select m0.id, m0.status from ${m} m0 join v on v.id = m0.id where m0.status ${inFrom} for update of m0), ` +
      `upd as (update ${m} m set ${sets.join(', ')} from old join v on v.id = old.id where m.id = old.id and m.status ${inFrom} returning m.id, old.status as old_status, v.reason), ` +
      `hist as (insert into ${h} (message_id, status, reason) select id, ?, reason from upd where old_status <> ?) ` +
      `select id from upd`;
    const result = (await knex.raw(sql, [...bindings, ...from, to, ...from, to, to] as Knex.RawBinding[])) as { rows: { id: string | number }[] };
    for (const r of result.rows) moved.add(String(r.id));
  }
  return moved;
}
