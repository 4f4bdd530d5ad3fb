import { concat, equal, fromHex, isZero, toHex, type Bytes } from './bytes.js';
import {
  ACCOUNT_VALUE_LENGTH,
  DEPTH,
  MAX_LEAVES,
  PROOF_LENGTH,
  STORAGE_VALUE_LENGTH,
  ZERO_WORD,
  accountHKey,
  decodeAccountValue,
  decodeLeafOpening,
  decodeRootNode,
  storageHKey,
  storageKeyWord,
  treeConstants,
  type AccountValue,
  type LeafOpening,
} from './encoding.js';
import { ethersKeccakHashProvider, type HashProvider } from './hash.js';
import type * as spec from '../../generated/rpc/methods.js';

/**
 * Verifier for integrators: checks svc_getProof results against a state root with nothing but the hash function
 * (ethers' keccak256 by default). Inclusion: the root is recomputed from the 42 entries and the bits of the leaf index,
 * and the leaf must commit to H(key) and H(value). Non-inclusion: both neighbours are included, they are adjacent in
 * the sorted leaf list (left.next == right index, right.prev == left index) and left.hKey < H(key) < right.hKey.
 */

export { decodeAccountValue, type AccountValue };

/** svc_getProof's result and its parts, as specs/rpc.openrpc.json defines them. */
export type MerkleProofJson = spec.MerkleProof;
export type InclusionProofJson = spec.InclusionProof;
export type NonInclusionProofJson = spec.NonInclusionProof;
export type ProofEntryJson = spec.ProofEntry;
export type StateProofResultJson = spec.StateProof;
/**
 * The same shapes with bytes, or hex, wherever the JSON has hex: the verifier takes either (svc_getProof's backend
 * checks a result in bytes, then encodes it once).
 */
export type Raw<T> = T extends string
  ? string | Bytes
  : T extends readonly (infer U)[]
    ? Raw<U>[]
    : T extends object
      ? { [K in keyof T]: K extends 'key' ? T[K] : Raw<T[K]> }
      : T;

export type KeyKind = 'account' | 'storage';

export type Verified<T = object> = ({ ok: true } & T) | { ok: false; reason: string };

const fail = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });

function parseHex(s: unknown, what: string): Bytes {
  if (s instanceof Uint8Array) return s;
  if (typeof s !== 'string') throw new Error(`${what} is not a hex string`);
  try {
    return fromHex(s);
  } catch {
    throw new Error(`${what} is not 0x-prefixed even-length hex`);
  }
}

/** Recomputes the root from a leaf's 42 proof entries; returns the leaf opening when it matches `root`. */
export function verifyMerkleProof(
  root: string,
  leafIndex: number,
  proof: Raw<MerkleProofJson>,
  hasher: HashProvider = ethersKeccakHashProvider,
): Verified<{ opening: LeafOpening; value: Bytes }> {
  try {
    if (!Number.isSafeInteger(leafIndex) || leafIndex < 0 || leafIndex >= MAX_LEAVES)
      return fail(`leaf index ${leafIndex} is not in [0, 2^${DEPTH})`);
    const raw = proof?.proofRelatedNodes;
    if (!Array.isArray(raw) || raw.length !== PROOF_LENGTH)
      return fail(
        `proofRelatedNodes must have ${PROOF_LENGTH} entries, got ${Array.isArray(raw) ? raw.length : 'none'}`,
      );
    const nodes = raw.map((n, i) => parseHex(n, `proofRelatedNodes[${i}]`));
    const value = parseHex(proof.value, 'value');
    if (nodes[0]!.length !== hasher.rootWireLength) return fail(`the root node must be ${hasher.rootWireLength} bytes`);
    for (let i = 1; i < DEPTH; i++)
      if (nodes[i]!.length !== 64) return fail(`proofRelatedNodes[${i}] must be a 64-byte node`);
    const sibling = nodes[DEPTH]!;
    const siblingEmpty = sibling.length === hasher.emptyLeafWire.length && isZero(sibling);
    if (!siblingEmpty && sibling.length !== hasher.leafWireLength)
      return fail(
        `the sibling leaf must be ${hasher.leafWireLength} bytes (or ${hasher.emptyLeafWire.length} zero bytes when empty)`,
      );
    if (nodes[DEPTH + 1]!.length !== hasher.leafWireLength)
      return fail(`the leaf opening must be ${hasher.leafWireLength} bytes`);
    const { nextFreeNode, subRoot } = decodeRootNode(hasher.rootFromWire(nodes[0]!));
    if (leafIndex >= nextFreeNode) return fail(`leaf index ${leafIndex} is not below nextFreeNode ${nextFreeNode}`);
    if (isZero(nodes[DEPTH + 1]!)) return fail('the leaf opening is empty');
    const opening = decodeLeafOpening(hasher.leafFromWire(nodes[DEPTH + 1]!));
    let cur = hasher.hash(nodes[DEPTH + 1]!);
    for (let level = 0; level < DEPTH; level++) {
      const entry = nodes[DEPTH - level]!;
      const sib = level === 0 && siblingEmpty ? ZERO_WORD : hasher.hash(entry);
      const right = Math.floor(leafIndex / 2 ** level) % 2 === 1;
      cur = hasher.hash(right ? concat(sib, cur) : concat(cur, sib));
    }
    if (!equal(cur, subRoot)) return fail('the path does not lead to the sub-root in the root node');
    const top = toHex(hasher.hash(nodes[0]!));
    if (top !== root.toLowerCase()) return fail(`the root node hashes to ${top}, not the expected root ${root}`);
    return { ok: true, opening, value };
  } catch (err) {
    return fail(err instanceof Error ? err.message : String(err));
  }
}

export function hKeyOf(kind: KeyKind, key: string, hasher: HashProvider = ethersKeccakHashProvider): Bytes {
  return kind === 'account' ? accountHKey(hasher, key) : storageHKey(hasher, storageKeyWord(key));
}

/** H(key) of a proof entry's key, or why the key is not one. */
function keyHash(kind: KeyKind, key: string, hasher: HashProvider): Verified<{ hKey: Bytes }> {
  try {
    return { ok: true, hKey: hKeyOf(kind, key, hasher) };
  } catch (err) {
    return fail(`key: ${(err as Error).message}`);
  }
}

/** Checks that `key` exists with the proof's value; returns the value (decoded for accounts). */
export function verifyInclusion(
  root: string,
  entry: Raw<InclusionProofJson>,
  kind: KeyKind,
  hasher: HashProvider = ethersKeccakHashProvider,
): Verified<{ value: Bytes; account?: AccountValue }> {
  const m = verifyMerkleProof(root, entry.leafIndex, entry.proof, hasher);
  if (!m.ok) return m;
  const k = keyHash(kind, entry.key, hasher);
  if (!k.ok) return k;
  if (!equal(m.opening.hKey, k.hKey)) return fail('the leaf holds a different key');
  const expected = valueLength(kind);
  if (m.value.length !== expected) return fail(`the value must be ${expected} bytes, got ${m.value.length}`);
  if (!equal(m.opening.hValue, valueHash(kind, m.value, hasher)))
    return fail('the leaf does not commit to the given value');
  return { ok: true, value: m.value, ...(kind === 'account' ? { account: decodeAccountValue(m.value) } : {}) };
}

const valueLength = (kind: KeyKind): number => (kind === 'account' ? ACCOUNT_VALUE_LENGTH : STORAGE_VALUE_LENGTH);

function valueHash(kind: KeyKind, value: Bytes, hasher: HashProvider): Bytes {
  return kind === 'account' ? hasher.accountValue(value) : hasher.storageValue(value);
}

/** A neighbour's value must match its leaf (sentinels carry no value and a zero hValue). */
function neighbourValueOk(opening: LeafOpening, value: Bytes, kind: KeyKind, hasher: HashProvider): boolean {
  if (value.length === 0) return equal(opening.hValue, ZERO_WORD);
  return value.length === valueLength(kind) && equal(opening.hValue, valueHash(kind, value, hasher));
}

const cmp = (a: Bytes, b: Bytes): number => {
  for (let i = 0; i < 32; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
};

/** Checks that `key` is absent: its two neighbours are included and adjacent, and H(key) falls between them. */
export function verifyNonInclusion(
  root: string,
  entry: Raw<NonInclusionProofJson>,
  kind: KeyKind,
  hasher: HashProvider = ethersKeccakHashProvider,
): Verified {
  const left = verifyMerkleProof(root, entry.leftLeafIndex, entry.leftProof, hasher);
  if (!left.ok) return fail(`left proof: ${left.reason}`);
  const right = verifyMerkleProof(root, entry.rightLeafIndex, entry.rightProof, hasher);
  if (!right.ok) return fail(`right proof: ${right.reason}`);
  if (!neighbourValueOk(left.opening, left.value, kind, hasher))
    return fail('left proof: the leaf does not commit to the given value');
  if (!neighbourValueOk(right.opening, right.value, kind, hasher))
    return fail('right proof: the leaf does not commit to the given value');
  if (left.opening.next !== entry.rightLeafIndex)
    return fail(`left.next is ${left.opening.next}, not the right leaf index ${entry.rightLeafIndex}`);
  if (right.opening.prev !== entry.leftLeafIndex)
    return fail(`right.prev is ${right.opening.prev}, not the left leaf index ${entry.leftLeafIndex}`);
  const k = keyHash(kind, entry.key, hasher);
  if (!k.ok) return k;
  if (!(cmp(left.opening.hKey, k.hKey) < 0)) return fail("H(key) is not above the left neighbour's hKey");
  if (!(cmp(k.hKey, right.opening.hKey) < 0)) return fail("H(key) is not below the right neighbour's hKey");
  return { ok: true };
}

export const isInclusion = (e: Raw<ProofEntryJson>): e is Raw<InclusionProofJson> =>
  e !== null && typeof e === 'object' && 'leafIndex' in e;

export function verifyEntry(
  root: string,
  entry: Raw<ProofEntryJson>,
  kind: KeyKind,
  hasher: HashProvider = ethersKeccakHashProvider,
): Verified<{ account?: AccountValue; exists: boolean }> {
  if (entry === null || typeof entry !== 'object' || typeof entry.key !== 'string')
    return fail('not a proof entry (no key)');
  if (isInclusion(entry)) {
    const r = verifyInclusion(root, entry, kind, hasher);
    return r.ok ? { ok: true, exists: true, ...(r.account ? { account: r.account } : {}) } : r;
  }
  if (!('leftLeafIndex' in entry))
    return fail('neither an inclusion ({leafIndex, proof}) nor a non-inclusion ({leftLeafIndex, …}) proof');
  const r = verifyNonInclusion(root, entry, kind, hasher);
  return r.ok ? { ok: true, exists: false } : r;
}

/**
 * Verifies a whole svc_getProof result against the account-tree root: the account proof against `root`, each storage
 * proof against the account's storageRoot (the empty storage root when the account is absent). On failure `failed`
 * names the first entry that does not verify ("accountProof", "storageProofs[2]").
 */
export function verifyStateProof(
  root: string,
  result: Raw<StateProofResultJson>,
  hasher: HashProvider = ethersKeccakHashProvider,
):
  { ok: true; account: AccountValue | undefined; storageRoot: string } | { ok: false; failed: string; reason: string } {
  if (!/^0x[0-9a-fA-F]{64}$/.test(root))
    return { ok: false, failed: 'root', reason: 'the root must be 32 bytes of hex' };
  if (
    result === null ||
    typeof result !== 'object' ||
    !('accountProof' in result) ||
    !Array.isArray(result.storageProofs)
  ) {
    return { ok: false, failed: 'result', reason: 'not a svc_getProof result ({accountProof, storageProofs[]})' };
  }
  const acct = verifyEntry(root, result.accountProof, 'account', hasher);
  if (!acct.ok) return { ok: false, failed: 'accountProof', reason: acct.reason };
  const storageRoot = acct.account ? toHex(acct.account.storageRoot) : toHex(treeConstants(hasher).emptyRoot);
  for (const [i, e] of result.storageProofs.entries()) {
    const r = verifyEntry(storageRoot, e, 'storage', hasher);
    if (!r.ok)
      return {
        ok: false,
        failed: `storageProofs[${i}]${e && typeof e.key === 'string' ? ` (${e.key})` : ''}`,
        reason: r.reason,
      };
  }
  return { ok: true, account: acct.account, storageRoot };
}
