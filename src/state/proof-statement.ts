import { toHex, type Bytes } from './bytes.js';
import { DEPTH, HEAD_INDEX, MAX_LEAVES, TAIL_INDEX } from './encoding.js';
import type { KeyEntry, ProofReads, ProofRequest, TreeId } from './store.js';

/**
 * One SQL statement that reads everything the proofs of some keys at one block need, so a proof is one round trip and
 * one consistent snapshot (a single statement needs no read transaction).
 *
 * The path of a leaf is known from its index alone (sibling of the leaf, sibling of each ancestor at height 1…39, the
 * root row), so the statement finds, per key: its floor key (the latest live version of the greatest hKey ≤ it, a
 * backward walk of the primary key); the leaf to prove (the floor, or the head sentinel when there is none); for an
 * absent key also its right neighbour, read from the left leaf's `next` field (bytes 32…63 of the opening, of which
 * indices < 2^40 use the last 8); then the latest version ≤ the block of every node on those paths (one index seek
 * each), except where the tree has never had a leaf: a node at height h whose index is above (nextFreeNode − 1) >> h
 * (from the root row) reads as null without a seek (at 100,000 leaves, 22 of the 39 heights). An earlier one-statement
 * proof looked the right neighbour up as a ceiling key, `hkey >= q order by hkey, block desc`, which the primary key
 * cannot answer in that order (a sort of the keys above q): that, not the single statement, made it slower than a
 * statement per step.
 *
 * Parameters: per key a tree id and an hKey (bare hex text, '' for the account tree), then the block. The keys are
 * scalar parameters, one statement text per key count, rather than arrays: with an array the planner guesses its length
 * for a generic plan, which then always looks dearer than a custom plan, so a prepared statement was planned again on
 * every execution. Rows: see ProofStatementRow.
 */
export function proofStatementSql(table: (name: string) => string, keys: number): string {
  if (!Number.isInteger(keys) || keys < 1 || keys > MAX_KEYS_PER_STATEMENT)
    throw new Error(`a proof statement takes 1 to ${MAX_KEYS_PER_STATEMENT} keys, not ${keys}`);
  const perHeight = MAX_LEAVES;
  const rootPos = (DEPTH + 1) * MAX_LEAVES;
  const block = `$${2 * keys + 1}::bigint`;
  // The latest version ≤ the block of one row: one backward step of the primary key; `gate`, a condition on the outer
  // row only, becomes a one-time filter that skips the seek when false.
  const latest = (tree: string, pos: string, gate = '') =>
    `select n.value from ${table('nodes')} n where ${gate}n.tree = ${tree} and n.pos = ${pos} and n.block <= ${block} order by n.block desc limit 1`;
  const requests = Array.from(
    { length: keys },
    (_, i) => `(${i + 1}, decode($${2 * i + 1}::text, 'hex'), decode($${2 * i + 2}::text, 'hex'))`,
  ).join(', ');
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
), r as (
  select f.ord, rr.value, coalesce(('x' || encode(substring(rr.value from 25 for 8), 'hex'))::bit(64)::bigint, 2) - 1 as top from f
  left join lateral (${latest('f.tree', `${rootPos}::bigint`)}) rr on true
), l as (
  select f.ord, f.tree, coalesce(f.fi, ${HEAD_INDEX}) as idx, f.fh is not distinct from f.hkey as found, lr.value, r.top from f join r using (ord)
  left join lateral (${latest('f.tree', `coalesce(f.fi, ${HEAD_INDEX})`)}) lr on true
), leaves as (
  select ord, tree, idx, top from l
  union all
  select ord, tree, case when value is null then ${TAIL_INDEX}::bigint else ('x' || encode(substring(value from 57 for 8), 'hex'))::bit(64)::bigint end, top from l where not found
), want as (
  select min(ord) as ord, tree, h * ${perHeight}::bigint + i as pos, bool_or(i <= top >> h) as live from (
    select ord, tree, 0 as h, idx as i, top from leaves
    union all select ord, tree, 0, idx # 1, top from leaves
    union all select ord, tree, h, (idx >> h) # 1, top from leaves, generate_series(1, ${DEPTH - 1}) as h
  ) x group by tree, h, i
)
select string_agg(int4send(ord) || int8send(coalesce(pos, -1)) || coalesce(int4send(length(value)) || value, '\\xffffffff'::bytea), ''::bytea) as packed from (
  select f.ord, f.fi as pos, f.fh as value from f
  union all select -r.ord, ${rootPos}, r.value from r
  union all select -w.ord, w.pos, v.value from want w
  left join lateral (${latest('w.tree', 'w.pos', 'w.live and ')}) v on true
) z`;
}

/**
 * A row of the statement: ord > 0 is the floor of request ord (1-based; pos its leaf index, value its hKey, both null
 * when there is none); ord < 0 is a node row of the tree of request −ord (value null when cleared or never written).
 * The statement answers them packed in one bytea (each row int4 ord ‖ int8 pos, −1 for null ‖ int4 length, −1 for null
 * ‖ value): every column of every row cost PGlite's wire parser ~7 µs.
 */
export interface ProofStatementRow {
  ord: number;
  pos: number | null;
  value: Uint8Array | null;
}

/** The rows of the statement's one column. */
export function unpackRows(packed: Uint8Array | null): ProofStatementRow[] {
  const rows: ProofStatementRow[] = [];
  if (!packed) return rows;
  const v = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  for (let at = 0; at < packed.length;) {
    const [ord, pos, len] = [v.getInt32(at), Number(v.getBigInt64(at + 4)), v.getInt32(at + 12)];
    at += 16;
    rows.push({ ord, pos: pos < 0 ? null : pos, value: len < 0 ? null : packed.subarray(at, (at += len)) });
  }
  return rows;
}

/** Keys read by one statement; a request with more is read in several (each at the same settled block). */
export const MAX_KEYS_PER_STATEMENT = 8;

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
      m.set(req.hKey, row.value === null ? undefined : { hKey: toHex(row.value), leafIndex: Number(row.pos) });
    } else {
      let m = nodes.get(req.tree);
      if (!m) nodes.set(req.tree, (m = new Map()));
      m.set(Number(row.pos), row.value);
    }
  }
  return { floors, nodes };
}
