import { concat, fromHex, toHex, type Bytes } from './bytes.js';
import {
  DEPTH,
  HEAD_INDEX,
  LEAF_OPENING_LENGTH,
  MAX_LEAVES,
  decodeLeafOpening,
  decodeRootNode,
  encodeLeafOpening,
  encodeRootNode,
  leafHash,
  rootHash,
  type LeafOpening,
  type TreeConstants,
} from './encoding.js';
import type { StateReader, TreeId, TreeWrites } from './store.js';

/**
 * The sparse Merkle tree algorithms over a StateReader: applying a batch of key changes (producing the
 * rows to write and the new root); proofs and other reads are in tree-read.ts. Positions pack (height, index) into one
 * safe integer: height × 2^40 + index; height 0 holds leaves, 40 the sub-root, 41 the root node.
 *
 * Leaf indices reach 2^40, beyond 32-bit integers: index arithmetic uses division, never >> or ^.
 */
export const posOf = (height: number, index: number): number => height * MAX_LEAVES + index;
export const ROOT_POS = posOf(DEPTH + 1, 0);
export const shr = (i: number, h: number): number => Math.floor(i / 2 ** h);

export const ZERO_HKEY = toHex(new Uint8Array(32));

/** A change to one key: set its raw value (with the hValue committed in the leaf) or delete it (value null). */
export type KeyChange = { hKey: string; value: Bytes; hValue: Bytes } | { hKey: string; value: null };

interface Leaf {
  opening: LeafOpening;
  value: Bytes;
}

const leafRow = (l: Leaf): Bytes => concat(encodeLeafOpening(l.opening), l.value);
export const parseLeafRow = (row: Bytes): Leaf => ({
  opening: decodeLeafOpening(row.subarray(0, LEAF_OPENING_LENGTH)),
  value: row.slice(LEAF_OPENING_LENGTH),
});

/** Rows of a tree that holds only the head and tail sentinels: what an unwritten (or cleared) tree reads as. */
const templates = new WeakMap<TreeConstants, Map<number, Bytes>>();
export function templateRows(c: TreeConstants): Map<number, Bytes> {
  let rows = templates.get(c);
  if (rows) return rows;
  rows = new Map<number, Bytes>();
  const head = encodeLeafOpening(c.head);
  const tail = encodeLeafOpening(c.tail);
  rows.set(posOf(0, 0), head);
  rows.set(posOf(0, 1), tail);
  let row = concat(leafHash(c.hasher, head), leafHash(c.hasher, tail));
  rows.set(posOf(1, 0), row);
  for (let h = 2; h <= DEPTH; h++) {
    row = concat(c.hasher.hash(row), c.emptyHashes[h - 1]!);
    rows.set(posOf(h, 0), row);
  }
  rows.set(ROOT_POS, encodeRootNode(2, c.hasher.hash(row)));
  templates.set(c, rows);
  return rows;
}

/**
 * Rows of one tree as seen by a reader, with the empty-tree template standing in when the tree has no
 * root row (never written, or cleared with its account). `fresh` ignores stored rows altogether.
 */
export class RowCache {
  private rows = new Map<number, Bytes | null>();
  private materialized: boolean | undefined;

  constructor(
    private readonly c: TreeConstants,
    private readonly reader: StateReader,
    private readonly tree: TreeId,
    private readonly fresh: boolean,
  ) {
    if (fresh) this.materialized = false;
  }

  async load(positions: Iterable<number>): Promise<void> {
    const want = [...new Set(positions)].filter((p) => !this.rows.has(p));
    if (this.materialized === undefined && !this.rows.has(ROOT_POS)) want.push(ROOT_POS);
    if (want.length === 0) return;
    const got = this.fresh ? new Map<number, Bytes>() : await this.reader.nodes(this.tree, want);
    for (const p of want) this.rows.set(p, got.get(p) ?? null);
    if (this.materialized === undefined) this.materialized = this.rows.get(ROOT_POS) !== null;
  }

  /** The row at a loaded position (undefined: empty). */
  get(pos: number): Bytes | undefined {
    if (this.fresh) return templateRows(this.c).get(pos);
    if (!this.rows.has(pos)) throw new Error(`row ${pos} read before it was loaded`);
    const row = this.rows.get(pos);
    if (row) return row;
    return this.materialized ? undefined : templateRows(this.c).get(pos);
  }

  async fetch(pos: number): Promise<Bytes | undefined> {
    await this.load([pos]);
    return this.get(pos);
  }

  /** Default encoding of an internal node at height h ≥ 1 whose row is absent: two empty children. */
  internal(h: number, index: number): Bytes {
    return this.get(posOf(h, index)) ?? concat(this.c.emptyHashes[h - 1]!, this.c.emptyHashes[h - 1]!);
  }
}

export interface TreeUpdate {
  root: Bytes;
  writes: TreeWrites;
}

type SetChange = KeyChange & { value: Bytes };

/** A batch sorted into what it does to the leaf list: one change per key (the last), keys in ascending order. */
interface Plan {
  updates: { idx: number; change: SetChange }[];
  inserts: { hKey: string; pred: { hKey: string; leafIndex: number }; change: SetChange }[];
  deletes: { hKey: string; idx: number }[];
}

async function planChanges(
  reader: StateReader,
  tree: TreeId,
  changes: readonly KeyChange[],
  fresh: boolean,
): Promise<Plan> {
  const byKey = new Map<string, KeyChange>();
  for (const ch of changes) byKey.set(ch.hKey, ch);
  const keys = [...byKey.keys()].sort();
  const floors = fresh ? new Map() : await reader.floorKeys(tree, keys);
  const plan: Plan = { updates: [], inserts: [], deletes: [] };
  for (const k of keys) {
    const ch = byKey.get(k)!;
    const f = floors.get(k);
    const exists = f !== undefined && f.hKey === k;
    if (ch.value !== null) {
      if (exists) plan.updates.push({ idx: f.leafIndex, change: ch });
      else plan.inserts.push({ hKey: k, pred: f ?? { hKey: ZERO_HKEY, leafIndex: HEAD_INDEX }, change: ch });
    } else if (exists) plan.deletes.push({ hKey: k, idx: f.leafIndex });
  }
  return plan;
}

/** Loads the leaves the batch touches and, one hop further, their list neighbours, in two reads. */
async function prefetchLeaves(rows: RowCache, plan: Plan): Promise<void> {
  const { updates, inserts, deletes } = plan;
  await rows.load(
    [...updates.map((u) => u.idx), ...deletes.map((d) => d.idx), ...inserts.map((i) => i.pred.leafIndex)].map((i) =>
      posOf(0, i),
    ),
  );
  const hop: number[] = [];
  for (const d of deletes) {
    const row = rows.get(posOf(0, d.idx));
    if (!row) continue;
    const { prev, next } = parseLeafRow(row).opening;
    hop.push(prev, next);
  }
  for (const ins of inserts) {
    const row = rows.get(posOf(0, ins.pred.leafIndex));
    if (row) hop.push(parseLeafRow(row).opening.next);
  }
  await rows.load(hop.map((i) => posOf(0, i)));
}

/**
 * Applies the plan to the leaf list: updates in place, inserts at the next free index linked between their
 * neighbours, deletes unlinked. Returns the changed leaves (null = cleared) and the next free index.
 */
async function relinkLeaves(rows: RowCache, tree: TreeId, plan: Plan, writes: TreeWrites, nextFree: number) {
  const leaves = new Map<number, Leaf | null>();
  const getLeaf = async (idx: number): Promise<Leaf> => {
    const mine = leaves.get(idx);
    if (mine) return mine;
    if (mine === null) throw new Error(`leaf ${idx} of tree "${tree}" was cleared in this batch but is still linked`);
    const row = await rows.fetch(posOf(0, idx));
    if (!row) throw new Error(`leaf ${idx} of tree "${tree}" is linked but empty: the tree is corrupt`);
    return parseLeafRow(row);
  };
  for (const u of plan.updates) {
    const leaf = await getLeaf(u.idx);
    leaves.set(u.idx, { opening: { ...leaf.opening, hValue: u.change.hValue }, value: u.change.value });
  }
  let last: { hKey: string; idx: number } | undefined;
  for (const ins of plan.inserts) {
    const left = last && last.hKey > ins.pred.hKey ? last.idx : ins.pred.leafIndex;
    const l = await getLeaf(left);
    const rightIdx = l.opening.next;
    const r = await getLeaf(rightIdx);
    if (nextFree >= MAX_LEAVES) throw new Error(`tree "${tree}" is full (${MAX_LEAVES} leaves)`);
    const idx = nextFree++;
    leaves.set(idx, {
      opening: { prev: left, next: rightIdx, hKey: fromHex(ins.hKey), hValue: ins.change.hValue },
      value: ins.change.value,
    });
    leaves.set(left, { ...l, opening: { ...l.opening, next: idx } });
    leaves.set(rightIdx, { ...r, opening: { ...r.opening, prev: idx } });
    writes.keys.set(ins.hKey, idx);
    last = { hKey: ins.hKey, idx };
  }
  for (const d of plan.deletes) {
    const { prev, next } = (await getLeaf(d.idx)).opening;
    const p = await getLeaf(prev);
    leaves.set(prev, { ...p, opening: { ...p.opening, next } });
    const n = await getLeaf(next);
    leaves.set(next, { ...n, opening: { ...n.opening, prev } });
    leaves.set(d.idx, null);
    writes.keys.set(d.hKey, null);
  }
  return { leaves, nextFree };
}

/** Recomputes the dirty paths bottom-up (sibling hashes from the parents' stored rows); returns the sub-root. */
async function rehashPaths(
  c: TreeConstants,
  rows: RowCache,
  leaves: Map<number, Leaf | null>,
  writes: TreeWrites,
): Promise<Bytes> {
  const ancestors: number[] = [];
  for (const idx of leaves.keys()) for (let h = 1; h <= DEPTH; h++) ancestors.push(posOf(h, shr(idx, h)));
  await rows.load(ancestors);
  let level = new Map<number, Bytes>();
  for (const [idx, leaf] of leaves) {
    if (leaf) {
      const row = leafRow(leaf);
      writes.nodes.set(posOf(0, idx), row);
      level.set(idx, leafHash(c.hasher, row.subarray(0, LEAF_OPENING_LENGTH)));
    } else {
      writes.nodes.set(posOf(0, idx), null);
      level.set(idx, c.emptyHashes[0]!);
    }
  }
  for (let h = 1; h <= DEPTH; h++) {
    const up = new Map<number, Bytes>();
    for (const child of level.keys()) {
      const p = shr(child, 1);
      if (up.has(p)) continue;
      const old = rows.internal(h, p);
      const row = concat(level.get(2 * p) ?? old.subarray(0, 32), level.get(2 * p + 1) ?? old.subarray(32, 64));
      writes.nodes.set(posOf(h, p), row);
      up.set(p, c.hasher.hash(row));
    }
    level = up;
  }
  return level.get(0)!;
}

/**
 * Applies a batch of key changes to one tree at the reader's block and returns the rows to write.
 * Given the same starting tree and the same set of changes, the result does not depend on the order of
 * `changes`: the batch is deduplicated (last change of a key wins), then applied as updates, inserts in
 * ascending hKey order, then deletes. `reset` first clears the whole tree (a deleted account's storage).
 */
export async function applyChanges(
  c: TreeConstants,
  reader: StateReader,
  tree: TreeId,
  changes: readonly KeyChange[],
  options: { reset?: boolean } = {},
): Promise<TreeUpdate> {
  const writes: TreeWrites = { nodes: new Map(), keys: new Map() };
  if (options.reset) {
    const live = await reader.liveRows(tree);
    for (const p of live.positions) writes.nodes.set(p, null);
    for (const k of live.hKeys) writes.keys.set(k, null);
  }
  const fresh = options.reset ?? false;
  const rows = new RowCache(c, reader, tree, fresh);
  const plan = await planChanges(reader, tree, changes, fresh);
  await prefetchLeaves(rows, plan);
  const firstFree = decodeRootNode(rows.get(ROOT_POS) ?? templateRows(c).get(ROOT_POS)!).nextFreeNode;
  const { leaves, nextFree } = await relinkLeaves(rows, tree, plan, writes, firstFree);

  if (leaves.size === 0) {
    // Nothing changed (or the tree was only cleared): the root is whatever the rows now say.
    if (fresh) writes.nodes.set(ROOT_POS, null);
    const rootRow = fresh ? templateRows(c).get(ROOT_POS)! : (rows.get(ROOT_POS) ?? templateRows(c).get(ROOT_POS)!);
    return { root: rootHash(c.hasher, rootRow), writes };
  }
  const rootRow = encodeRootNode(nextFree, await rehashPaths(c, rows, leaves, writes));
  writes.nodes.set(ROOT_POS, rootRow);
  return { root: rootHash(c.hasher, rootRow), writes };
}
