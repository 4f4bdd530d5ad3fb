import fc from 'fast-check';
import { toHex, word } from '../../src/state/bytes.js';
import { treeConstants } from '../../src/state/encoding.js';
import { keccakHashProvider } from '../../src/state/hash.js';
import type { VersionedStore } from '../../src/state/store.js';
import { applyChanges, type KeyChange } from '../../src/state/tree.js';
import { proveKey, treeRoot, type KeyProof } from '../../src/state/tree-read.js';
import { verifyEntry, type ProofEntryJson } from '../../src/state/verify.js';
import { proofEntryJson } from '../../src/state/state.js';

/**
 * Test harness for one storage-style tree (keys are slots, values 32-byte words) against a naive Map
 * model: blocks of random sets and deletes over a small key universe, so keys collide, disappear and
 * come back.
 */
export const c = treeConstants(keccakHashProvider);
let treeCounter = 0;
/** A fresh storage-tree id (so several runs can share one store). */
export const newTree = (): string => `0x${(++treeCounter).toString(16).padStart(40, '0')}`;
export const UNIVERSE = 12;

export const slotOf = (k: number): string => toHex(word(k + 1));
export const hKeyOf = (k: number): string => toHex(c.hasher.hash(word(k + 1)));

export type Op = { key: number; value: number };
/** A block: a list of ops; value 0 deletes the key. */
export const blockArb = fc.array(fc.record({ key: fc.nat(UNIVERSE - 1), value: fc.nat(3) }), {
  minLength: 0,
  maxLength: 10,
});
export const historyArb = fc.array(blockArb, { minLength: 1, maxLength: 6 });

export function changesOf(ops: readonly Op[]): KeyChange[] {
  return ops.map((o) =>
    o.value === 0
      ? { hKey: hKeyOf(o.key), value: null }
      : { hKey: hKeyOf(o.key), value: word(o.value), hValue: c.hasher.hash(word(o.value)) },
  );
}

/** Applies one block to the store (at number `n`) and the model; returns the new root. */
export async function applyBlock(
  store: VersionedStore,
  tree: string,
  n: bigint,
  ops: readonly Op[],
  model: Map<number, number>,
): Promise<string> {
  const at = n === 0n ? 0n : n - 1n;
  const update = await store.read(at, (r) => applyChanges(c, r, tree, changesOf(ops)));
  const root = toHex(update.root);
  await store.commit(
    { number: n, hash: `0x${n.toString(16)}`, parentHash: `0x${(n - 1n).toString(16)}`, root },
    new Map([[tree, update.writes]]),
  );
  for (const o of ops) {
    if (o.value === 0) model.delete(o.key);
    else model.set(o.key, o.value);
  }
  return root;
}

export async function proofOf(
  store: VersionedStore,
  tree: string,
  block: bigint,
  key: number,
): Promise<{ entry: ProofEntryJson; raw: KeyProof }> {
  const raw = await store.read(block, (r) => proveKey(c, r, tree, hKeyOf(key)));
  return { entry: proofEntryJson(slotOf(key), raw), raw };
}

export async function rootOf(store: VersionedStore, tree: string, block: bigint): Promise<string> {
  return toHex(await store.read(block, (r) => treeRoot(c, r, tree)));
}

/** Every key of the universe proves what the model says at `block`, against `root`. */
export async function checkAll(
  store: VersionedStore,
  tree: string,
  block: bigint,
  root: string,
  model: ReadonlyMap<number, number>,
): Promise<string[]> {
  const problems: string[] = [];
  for (let k = 0; k < UNIVERSE; k++) {
    const { entry } = await proofOf(store, tree, block, k);
    const v = verifyEntry(root, entry, 'storage', keccakHashProvider);
    if (!v.ok) problems.push(`key ${k} at ${block}: ${v.reason}`);
    else if (v.exists !== model.has(k))
      problems.push(`key ${k} at ${block}: exists=${v.exists}, model says ${model.has(k)}`);
    else if ('leafIndex' in entry && entry.proof.value !== toHex(word(model.get(k)!)))
      problems.push(`key ${k}: value ${entry.proof.value}`);
  }
  return problems;
}

/** Mutations of a proof entry; each must make verification fail. */
export function tamperings(entry: ProofEntryJson, rand: () => number): { what: string; entry: ProofEntryJson }[] {
  const flip = (hex: string): string => {
    const body = hex.slice(2);
    if (body.length === 0) return '0x00';
    const at = Math.floor(rand() * body.length);
    const d = parseInt(body[at]!, 16) ^ (1 + Math.floor(rand() * 15));
    return `0x${body.slice(0, at)}${d.toString(16)}${body.slice(at + 1)}`;
  };
  const flipNode = (nodes: string[]): string[] => {
    const i = Math.floor(rand() * nodes.length);
    return nodes.map((n, j) => (j === i ? flip(n) : n));
  };
  const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;
  const out: { what: string; entry: ProofEntryJson }[] = [];
  if ('leafIndex' in entry) {
    out.push({
      what: 'node byte',
      entry: { ...clone(entry), proof: { ...entry.proof, proofRelatedNodes: flipNode(entry.proof.proofRelatedNodes) } },
    });
    out.push({ what: 'value', entry: { ...clone(entry), proof: { ...entry.proof, value: flip(entry.proof.value) } } });
    out.push({
      what: 'leaf index',
      entry: { ...clone(entry), leafIndex: entry.leafIndex ^ (1 << Math.floor(rand() * 6)) },
    });
    out.push({ what: 'key', entry: { ...clone(entry), key: flip(entry.key) } });
    out.push({
      what: 'dropped entry',
      entry: { ...clone(entry), proof: { ...entry.proof, proofRelatedNodes: entry.proof.proofRelatedNodes.slice(1) } },
    });
  } else {
    out.push({
      what: 'left node byte',
      entry: {
        ...clone(entry),
        leftProof: { ...entry.leftProof, proofRelatedNodes: flipNode(entry.leftProof.proofRelatedNodes) },
      },
    });
    out.push({
      what: 'right node byte',
      entry: {
        ...clone(entry),
        rightProof: { ...entry.rightProof, proofRelatedNodes: flipNode(entry.rightProof.proofRelatedNodes) },
      },
    });
    out.push({
      what: 'left index',
      entry: { ...clone(entry), leftLeafIndex: entry.leftLeafIndex ^ (1 << Math.floor(rand() * 6)) },
    });
    out.push({
      what: 'right index',
      entry: { ...clone(entry), rightLeafIndex: entry.rightLeafIndex ^ (1 << Math.floor(rand() * 6)) },
    });
    out.push({
      what: 'swapped neighbours',
      entry: {
        ...clone(entry),
        leftLeafIndex: entry.rightLeafIndex,
        leftProof: entry.rightProof,
        rightLeafIndex: entry.leftLeafIndex,
        rightProof: entry.leftProof,
      },
    });
    out.push({
      what: 'right value',
      entry: { ...clone(entry), rightProof: { ...entry.rightProof, value: flip(entry.rightProof.value) } },
    });
  }
  return out;
}
