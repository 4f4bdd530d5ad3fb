import { concat, fromHex, isZero, padWord, toBigInt, word, type Bytes } from './bytes.js';
import type { HashProvider } from './hash.js';

/**
 * Byte encodings of the state tree (the proof format integrators verify). Every field is a 32-byte
 * big-endian word; H is the tree's HashProvider (keccak256 by default).
 *
 *   leaf opening (128 B)  = prevLeafIndex ‖ nextLeafIndex ‖ hKey ‖ hValue        leaf hash = H(opening)
 *   empty leaf            = hash 0x00…00 (its opening in a proof is 128 zero bytes)
 *   internal node (64 B) = leftChildHash ‖ rightChildHash                      node hash = H(node)
 *   root node (64 B)     = nextFreeNode ‖ subRoot                               root = H(root node)
 *   proof (42 entries)   = [root node, sibling at depth 1 … depth 39 (internal nodes), sibling leaf opening, leaf
 *   opening] account hKey         = H(address left-padded to 32 B)      storage hKey = H(slot as 32 B)
 *   storage value (32 B) = the slot's word                       hValue = H(value)
 *   account value (192 B) = nonce ‖ balance ‖ storageRoot ‖ codeHash (H(code)) ‖ keccakCodeHash ‖ codeSize,
 *                           hValue = H(value)
 *   head sentinel (leaf 0) = (prev 0, next ↦ first leaf, hKey 0, hValue 0)
 *   tail sentinel (leaf 1) = (prev ↦ last leaf, next 1, hKey 2^256 − 1, hValue 0)
 */

export const DEPTH = 40;
export const PROOF_LENGTH = DEPTH + 2;
export const LEAF_OPENING_LENGTH = 128;
export const ROOT_NODE_LENGTH = 64;
export const ACCOUNT_VALUE_LENGTH = 192;
export const STORAGE_VALUE_LENGTH = 32;
export const HEAD_INDEX = 0;
export const TAIL_INDEX = 1;
/** Leaves available in a depth-40 tree. */
export const MAX_LEAVES = 2 ** DEPTH;

export const ZERO_WORD: Bytes = new Uint8Array(32);

export interface LeafOpening {
  prev: number;
  next: number;
  hKey: Bytes;
  hValue: Bytes;
}

export function encodeLeafOpening(o: LeafOpening): Bytes {
  return concat(word(o.prev), word(o.next), o.hKey, o.hValue);
}

function indexFromWord(w: Bytes, what: string): number {
  const v = toBigInt(w);
  if (v >= BigInt(MAX_LEAVES)) throw new Error(`${what} ${v} is outside the tree (>= 2^${DEPTH})`);
  return Number(v);
}

export function decodeLeafOpening(b: Bytes): LeafOpening {
  if (b.length !== LEAF_OPENING_LENGTH)
    throw new Error(`a leaf opening is ${LEAF_OPENING_LENGTH} bytes, got ${b.length}`);
  return {
    prev: indexFromWord(b.subarray(0, 32), 'prevLeafIndex'),
    next: indexFromWord(b.subarray(32, 64), 'nextLeafIndex'),
    hKey: b.slice(64, 96),
    hValue: b.slice(96, 128),
  };
}

export function encodeRootNode(nextFreeNode: number, subRoot: Bytes): Bytes {
  return concat(word(nextFreeNode), subRoot);
}

export function decodeRootNode(b: Bytes): { nextFreeNode: number; subRoot: Bytes } {
  if (b.length !== ROOT_NODE_LENGTH) throw new Error(`the root node is ${ROOT_NODE_LENGTH} bytes, got ${b.length}`);
  const next = toBigInt(b.subarray(0, 32));
  if (next > BigInt(MAX_LEAVES)) throw new Error(`nextFreeNode ${next} is outside the tree`);
  return { nextFreeNode: Number(next), subRoot: b.slice(32, 64) };
}

/** Hash of a stored 128-byte leaf opening (an empty leaf, all zeros, hashes to 0x00…00): H(its wire form). */
export const leafHash = (h: HashProvider, opening: Bytes): Bytes =>
  isZero(opening) ? ZERO_WORD : h.hash(h.leafWire(opening));

/** The tree's root: H(the wire form of the stored 64-byte root node). */
export const rootHash = (h: HashProvider, rootNode: Bytes): Bytes => h.hash(h.rootWire(rootNode));

export function accountHKey(h: HashProvider, address: string): Bytes {
  const b = fromHex(address);
  if (b.length !== 20) throw new Error(`an address is 20 bytes, got ${b.length}`);
  return h.accountKey(b);
}

/** Storage keys are 32-byte words; shorter keys (as eth_getStorageAt accepts) are left-padded. */
export function storageKeyWord(slot: string): Bytes {
  const body = slot.replace(/^0x/i, '');
  if (!/^[0-9a-fA-F]{1,64}$/.test(body)) throw new Error(`not a storage key: "${slot.slice(0, 70)}"`);
  return fromHex(body.padStart(64, '0'));
}

export const storageHKey = (h: HashProvider, slot: Bytes): Bytes => h.storageKey(padWord(slot));

export interface AccountValue {
  nonce: bigint;
  balance: bigint;
  /** Root of the account's storage tree. */
  storageRoot: Bytes;
  /** H(code) under the tree's hash (equal to keccakCodeHash with the default keccak provider). */
  codeHash: Bytes;
  keccakCodeHash: Bytes;
  codeSize: bigint;
}

export function encodeAccountValue(a: AccountValue): Bytes {
  return concat(word(a.nonce), word(a.balance), a.storageRoot, a.codeHash, a.keccakCodeHash, word(a.codeSize));
}

export function decodeAccountValue(b: Bytes): AccountValue {
  if (b.length !== ACCOUNT_VALUE_LENGTH)
    throw new Error(`an account value is ${ACCOUNT_VALUE_LENGTH} bytes, got ${b.length}`);
  return {
    nonce: toBigInt(b.subarray(0, 32)),
    balance: toBigInt(b.subarray(32, 64)),
    storageRoot: b.slice(64, 96),
    codeHash: b.slice(96, 128),
    keccakCodeHash: b.slice(128, 160),
    codeSize: toBigInt(b.subarray(160, 192)),
  };
}

/** Everything that depends only on the hash function: empty-subtree hashes, sentinels, the empty root. */
export interface TreeConstants {
  hasher: HashProvider;
  /** emptyHashes[h] = hash of an empty subtree of height h (emptyHashes[0] = 0x00…00). */
  emptyHashes: Bytes[];
  head: LeafOpening;
  tail: LeafOpening;
  /** Root of a tree holding only the two sentinels (every account's storage tree starts here). */
  emptyRoot: Bytes;
  /** H(empty code): the code hashes of an account without code. */
  emptyCodeHash: Bytes;
}

const cache = new WeakMap<HashProvider, TreeConstants>();

export function treeConstants(hasher: HashProvider): TreeConstants {
  const hit = cache.get(hasher);
  if (hit) return hit;
  const emptyHashes: Bytes[] = [ZERO_WORD];
  for (let h = 1; h <= DEPTH; h++) emptyHashes.push(hasher.hash(concat(emptyHashes[h - 1]!, emptyHashes[h - 1]!)));
  const head: LeafOpening = { prev: HEAD_INDEX, next: TAIL_INDEX, hKey: ZERO_WORD, hValue: ZERO_WORD };
  const tail: LeafOpening = { prev: HEAD_INDEX, next: TAIL_INDEX, hKey: hasher.maxHKey, hValue: ZERO_WORD };
  // Leaves 0 and 1 share the bottom internal node; above it every sibling is empty.
  let cur = hasher.hash(concat(leafHash(hasher, encodeLeafOpening(head)), leafHash(hasher, encodeLeafOpening(tail))));
  for (let h = 1; h < DEPTH; h++) cur = hasher.hash(concat(cur, emptyHashes[h]!));
  const emptyRoot = rootHash(hasher, encodeRootNode(2, cur));
  const c: TreeConstants = {
    hasher,
    emptyHashes,
    head,
    tail,
    emptyRoot,
    emptyCodeHash: hasher.code(new Uint8Array(0)),
  };
  cache.set(hasher, c);
  return c;
}
