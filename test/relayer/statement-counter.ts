import type { Knex } from 'knex';

interface QueryEvent {
  sql: string;
  __knexTxId?: string;
}

const TX_CONTROL = /^\s*(begin|commit|rollback|savepoint|release savepoint)\b/i;

/**
 * Counts the SQL statements one relayer sends, from knex's query events: every statement naming the
 * relayer's schema, plus the BEGIN/COMMIT/ROLLBACK of each transaction that named it. Statements of others
 * sharing the client (the devnet's coordinator, a benchmark's own polling) are not counted.
 */
export function countStatements(
  knex: Knex,
  schema: string,
): { count(): number; byKind(): Record<string, number>; stop(): void } {
  const quoted = `"${schema}".`;
  const ours = new Set<string>();
  const control = new Map<string, number>();
  const kinds: Record<string, number> = {};
  let direct = 0;
  const onQuery = (q: QueryEvent) => {
    if (TX_CONTROL.test(q.sql)) {
      if (q.__knexTxId) control.set(q.__knexTxId, (control.get(q.__knexTxId) ?? 0) + 1);
      return;
    }
    if (!q.sql.includes(quoted) && !q.sql.includes(`${schema}.`)) return;
    direct++;
    const kind = q.sql.trim().split(/\s+/, 1)[0]!.toLowerCase();
    kinds[kind] = (kinds[kind] ?? 0) + 1;
    if (q.__knexTxId) ours.add(q.__knexTxId);
  };
  knex.on('query', onQuery);
  const txControl = () => [...ours].reduce((n, id) => n + (control.get(id) ?? 0), 0);
  return {
    count: () => direct + txControl(),
    byKind: () => ({ ...kinds, 'begin/commit': txControl() }),
    stop: () => void knex.off('query', onQuery),
  };
}
