import type { Bytes } from './bytes.js';
import { DEPTH, HEAD_INDEX, MAX_LEAVES, TAIL_INDEX } from './encoding.js';
import type { KeyEntry, ProofReads, ProofRequest, TreeId } from './store.js';

/**
 * One SQL statement that reads everything the proofs of some keys at one block need, so a proof is one
 * round trip and one consistent snapshot (a single statement needs no read transaction).
 *
 * The path of a leaf is known from its index alone (sibling of the leaf, sibling of each ancestor at
 * height 1…39, the root row), so the statement finds, per key: its floor key (the latest live version of
 * the greatest hKey ≤ it, a backward walk of the primary key); the leaf to prove (the floor, or the head
 * sentinel when there is none); for an absent key also its right neighbour, read from the left leaf's
 * `next` field (bytes 32…63 of the opening, of which indices < 2^40 use the last 8); then the latest
 * version ≤ the block of every node on those paths (one index seek each). An earlier one-statement proof
 * looked the right neighbour up as a ceiling key, `hkey >= q order by hkey, block desc`, which the
 * primary key cannot answer in that order (a sort of the keys above q): that, not the single statement,
 * made it slower than a statement per step.
 *
 * Parameters: per key a tree id and an hKey (bare hex text, '' for the account tree), then the block. The
 * keys are scalar parameters, one statement text per key count, rather than arrays: with an array the
 * planner guesses its length for a generic plan, which then always looks dearer than a custom plan, so
 * a prepared statement was planned again on every execution. Rows: see ProofStatementRow.
 */
export function proofStatementSql(table: (name: string) => string, keys: number): string {
  if (!Number.isInteger(keys) || keys < 1 || keys > MAX_KEYS_PER_STATEMENT) throw new Error(`a proof statement takes 1 to ${MAX_KEYS_PER_STATEMENT} keys, not ${keys}`);
  const perHeight = MAX_LEAVES;
  const rootPos = (DEPTH + 1) * MAX_LEAVES;
  const block = `$${2 * keys + 1}::bigint`;
  const requests = Array.from({ length: keys }, (_, i) => `(${i + 1}, decode($${2 * i + 1}::text, 'hex'), decode($${2 * i + 2}::text, 'hex'))`).join(', ');
  return `with q(ord, tree, hkey) as (
  values ${requests}
), f as (
  select q.ord, q.tree, q.hkey, fl.hkey as fh, fl.leaf_index as fi from q
  left join lateral (
    select d.hkey, d.leaf_index from (
      select distinct on (k.hkey) k.hkey, k.leaf_index from ${table('keys')} k
      where k.tree = q.tree and k.hkey <= q.hkey and k.block <= ${block} order by k.hkey desc, k.block desc
    ) d where d.leaf_index is not null limit 1
  ) fl on true
), l as (
  select f.ord, f.tree, coalesce(f.fi, ${HEAD_INDEX}) as idx, f.fh is not distinct from f.hkey as found, lr.value from f
  left join lateral (
    select n.value from ${table('nodes')} n where n.tree = f.tree and n.pos = coalesce(f.fi, ${HEAD_INDEX}) and n.block <= ${block} order by n.block desc limit 1
  ) lr on true
), leaves as (
  select ord, tree, idx from l
  union all
  select ord, tree, case when value is null then ${TAIL_INDEX}::bigint else ('x' || encode(substring(value from 57 for 8), 'hex'))::bit(64)::bigint end from l where not found
), want as (
  select min(ord) as ord, tree, pos from (
    select ord, tree, idx as pos from leaves
    union all select ord, tree, idx # 1 from leaves
    union all select ord, tree, h * ${perHeight}::bigint + ((idx >> h) # 1) from leaves, generate_series(1, ${DEPTH - 1}) as h
    union all select ord, tree, ${rootPos}::bigint from leaves
  ) x group by tree, pos
)
select f.ord, f.fi as pos, f.fh as value from f
union all
select -w.ord, w.pos, v.value from want w
left join lateral (
  select n.value from ${table('nodes')} n where n.tree = w.tree and n.pos = w.pos and n.block <= ${block} order by n.block desc limit 1
) v on true`;
}

/**
 * A row of the statement, three columns (each column of each row costs PGlite's wire parser): ord > 0 is
 * the floor of request ord (1-based; pos its leaf index, value its hKey, both null when there is none);
 * ord < 0 is a node row of the tree of request −ord (value null when cleared or never written).
 */
export interface ProofStatementRow {
  ord: number;
  pos: string | null;
  value: Uint8Array | null;
}

/** Keys read by one statement; a request with more is read in several (each at the same settled block). */
export const MAX_KEYS_PER_STATEMENT = 8;

const hexOf = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** The statement's rows as ProofReads for `requests` (`ord` numbered from 1 over `requests`). */
export function proofReadsOf(requests: readonly ProofRequest[], rows: readonly ProofStatementRow[]): ProofReads {
  const floors = new Map<TreeId, Map<string, KeyEntry | undefined>>();
  const nodes = new Map<TreeId, Map<number, Bytes | null>>();
  for (const row of rows) {
    const req = requests[Math.abs(row.ord) - 1];
    if (!req) throw new Error(`proof statement: a row of request ${row.ord} of ${requests.length}`);
    if (row.ord > 0) {
      let m = floors.get(req.tree);
      if (!m) floors.set(req.tree, (m = new Map()));
      m.set(req.hKey, row.value === null ? undefined : { hKey: `0x${hexOf(row.value)}`, leafIndex: Number(row.pos) });
    } else {
      let m = nodes.get(req.tree);
      if (!m) nodes.set(req.tree, (m = new Map()));
      m.set(Number(row.pos), row.value);
    }
  }
  return { floors, nodes };
}
