import type { Bytes } from './bytes.js';
import {
  DEPTH,
  HEAD_INDEX,
  LEAF_OPENING_LENGTH,
  PROOF_LENGTH,
  rootHash,
  type LeafOpening,
  type TreeConstants,
} from './encoding.js';
import type { KeyEntry, ProofReads, ProofRequest, ReadOptions, StateReader, TreeId, VersionedStore } from './store.js';
import { ROOT_POS, RowCache, parseLeafRow, posOf, shr, templateRows } from './tree.js';

// Reading the tree at a block (the writing side, and the row layout, are tree.ts'): proofs of keys, the root, values.
const siblingOf = (i: number): number => (i % 2 === 0 ? i + 1 : i - 1);

/** One leaf's proof: the 42 proofRelatedNodes and the raw value stored at the leaf. */
export interface LeafProof {
  leafIndex: number;
  proofRelatedNodes: Bytes[];
  value: Bytes;
  opening: LeafOpening;
}

export type KeyProof =
  { kind: 'inclusion'; leaf: LeafProof } | { kind: 'non-inclusion'; left: LeafProof; right: LeafProof };

async function leafProof(c: TreeConstants, rows: RowCache, idx: number): Promise<LeafProof> {
  const positions = [ROOT_POS, posOf(0, idx), posOf(0, siblingOf(idx))];
  for (let h = 1; h < DEPTH; h++) positions.push(posOf(h, siblingOf(shr(idx, h))));
  await rows.load(positions);
  const row = rows.get(posOf(0, idx));
  if (!row) throw new Error(`leaf ${idx} is empty`);
  const leaf = parseLeafRow(row);
  // Stored rows hold the 128-byte opening and 64-byte root node; proofs carry the hash's wire form.
  const h = c.hasher;
  const nodes: Bytes[] = [h.rootWire(rows.get(ROOT_POS) ?? templateRows(c).get(ROOT_POS)!).slice()];
  for (let level = DEPTH - 1; level >= 1; level--) nodes.push(rows.internal(level, siblingOf(shr(idx, level))));
  const sib = rows.get(posOf(0, siblingOf(idx)));
  nodes.push(sib ? h.leafWire(sib.slice(0, LEAF_OPENING_LENGTH)) : h.emptyLeafWire.slice());
  nodes.push(h.leafWire(row.slice(0, LEAF_OPENING_LENGTH)));
  if (nodes.length !== PROOF_LENGTH) throw new Error('internal: proof length');
  return { leafIndex: idx, proofRelatedNodes: nodes, value: leaf.value, opening: leaf.opening };
}

/** Proof of an hKey at the reader's block: inclusion when present, else its two list neighbours. */
export async function proveKey(c: TreeConstants, reader: StateReader, tree: TreeId, hKey: string): Promise<KeyProof> {
  const rows = new RowCache(c, reader, tree, false);
  const f = (await reader.floorKeys(tree, [hKey])).get(hKey);
  if (f && f.hKey === hKey) return { kind: 'inclusion', leaf: await leafProof(c, rows, f.leafIndex) };
  const left = await leafProof(c, rows, f?.leafIndex ?? HEAD_INDEX);
  const right = await leafProof(c, rows, left.opening.next);
  return { kind: 'non-inclusion', left, right };
}

/** A proof asked for a row its store's `proofReads` did not predict. */
class NotPrefetched extends Error {}

/** A reader over rows fetched ahead; anything else it is asked for throws NotPrefetched. */
function prefetchedReader(block: bigint, reads: ProofReads): StateReader {
  const refuse = (what: string): never => {
    throw new NotPrefetched(what);
  };
  return {
    block,
    nodes: async (tree, positions) => {
      const have = reads.nodes.get(tree);
      const out = new Map<number, Bytes>();
      for (const p of positions) {
        const row = have?.get(p);
        if (row === undefined) refuse(`row ${p} of tree "${tree}"`);
        else if (row !== null) out.set(p, row);
      }
      return out;
    },
    floorKeys: async (tree, hKeys) => {
      const have = reads.floors.get(tree);
      const out = new Map<string, KeyEntry | undefined>();
      for (const k of hKeys) {
        if (!have?.has(k)) refuse(`floor of ${k} in tree "${tree}"`);
        out.set(k, have!.get(k));
      }
      return out;
    },
    liveRows: async (tree) => refuse(`live rows of tree "${tree}"`),
  };
}

async function proveAll(c: TreeConstants, reader: StateReader, requests: readonly ProofRequest[]): Promise<KeyProof[]> {
  const out: KeyProof[] = [];
  for (const q of requests) out.push(await proveKey(c, reader, q.tree, q.hKey));
  return out;
}

/**
 * Proofs built from rows fetched ahead (`VersionedStore.proofReads`); undefined when they need a row not among them.
 */
export async function proveFromReads(
  c: TreeConstants,
  block: bigint,
  reads: ProofReads,
  requests: readonly ProofRequest[],
): Promise<KeyProof[] | undefined> {
  try {
    return await proveAll(c, prefetchedReader(block, reads), requests);
  } catch (err) {
    if (err instanceof NotPrefetched) return undefined;
    throw err;
  }
}

/**
 * Proofs of several keys at one block. When the store can fetch a proof's rows ahead (`proofReads`: one statement, no
 * transaction), the proofs are built from those; should a proof need a row the store did not predict, all of them are
 * built again through one read of the store (one read transaction on Postgres), so the result is the same either way.
 */
export async function proveKeysAt(
  c: TreeConstants,
  store: VersionedStore,
  block: bigint,
  requests: readonly ProofRequest[],
  options?: ReadOptions,
): Promise<KeyProof[]> {
  if (store.proofReads && requests.length > 0) {
    const proofs = await proveFromReads(c, block, await store.proofReads(block, requests), requests);
    if (proofs) return proofs;
  }
  return store.read(block, (reader) => proveAll(c, reader, requests), options);
}

/** The root of a tree at the reader's block (the empty-tree root when it has no rows). */
export async function treeRoot(c: TreeConstants, reader: StateReader, tree: TreeId): Promise<Bytes> {
  const rows = new RowCache(c, reader, tree, false);
  return rootHash(c.hasher, (await rows.fetch(ROOT_POS)) ?? templateRows(c).get(ROOT_POS)!);
}

/** The raw values stored under some hKeys at the reader's block (absent keys are left out). */
export async function readValues(
  c: TreeConstants,
  reader: StateReader,
  tree: TreeId,
  hKeys: readonly string[],
): Promise<Map<string, Bytes>> {
  const out = new Map<string, Bytes>();
  if (hKeys.length === 0) return out;
  const floors = await reader.floorKeys(tree, hKeys);
  const found = hKeys.flatMap((k) => {
    const f = floors.get(k);
    return f && f.hKey === k ? [{ k, idx: f.leafIndex }] : [];
  });
  const rows = new RowCache(c, reader, tree, false);
  await rows.load(found.map((f) => posOf(0, f.idx)));
  for (const { k, idx } of found) {
    const row = rows.get(posOf(0, idx));
    if (row) out.set(k, parseLeafRow(row).value);
  }
  return out;
}
