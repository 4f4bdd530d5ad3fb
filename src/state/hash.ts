import { getBytes, keccak256 as ethersKeccak256 } from 'ethers';
import { keccak256 } from '../common/eth/keccak.js';
import { padWord, type Bytes } from './bytes.js';

/**
 * The tree's hash function and the encodings that go with it, so the tree, the stores and the proof format stay the
 * same whichever is chosen (`STATE_HASH`). Stored rows always hold a leaf opening as 128 bytes (prev ‖ next ‖ hKey ‖
 * hValue, 32-byte words) and the root node as 64 (nextFreeNode ‖ subRoot); the provider says how those appear in a
 * proof ("wire" form, which is what gets hashed) and how keys, values and code are hashed. Every hash is 32 bytes.
 */
export interface HashProvider {
  /** `keccak256` or `poseidon2`: also the STATE_HASH value stored with the tree. */
  readonly name: string;
  /** The bare hash: internal nodes are hash(left ‖ right); leaves and the root node hash their wire form. */
  hash(data: Bytes): Bytes;
  /** The proof form of a stored 128-byte leaf opening (what the leaf hash is taken over). */
  leafWire(opening: Bytes): Bytes;
  /** Back to the stored 128-byte opening; throws on a wrong length or a non-canonical encoding. */
  leafFromWire(wire: Bytes): Bytes;
  rootWire(rootNode: Bytes): Bytes;
  rootFromWire(wire: Bytes): Bytes;
  readonly leafWireLength: number;
  readonly rootWireLength: number;
  /** How an empty sibling leaf appears in a proof (its hash is 0x00…00). */
  readonly emptyLeafWire: Bytes;
  /** The tail sentinel's hKey: above every key hash. */
  readonly maxHKey: Bytes;
  /** hKey of an account: from its 20-byte address. */
  accountKey(address: Bytes): Bytes;
  /** hKey of a storage slot: from its 32-byte key. */
  storageKey(slot: Bytes): Bytes;
  /** hValue of an account's 192-byte value. */
  accountValue(value: Bytes): Bytes;
  /** hValue of a storage slot's 32-byte value. */
  storageValue(value: Bytes): Bytes;
  /** The code hash the account value carries next to keccakCodeHash. */
  code(code: Bytes): Bytes;
}

const same = (b: Bytes): Bytes => b;

function exactly(n: number, what: string): (b: Bytes) => Bytes {
  return (b) => {
    if (b.length !== n) throw new Error(`${what} is ${n} bytes, got ${b.length}`);
    return b;
  };
}

/** keccak256 over our own encodings (STATE_HASH=keccak): the wire form is the stored form. */
export function keccakProvider(hash: (data: Bytes) => Bytes): HashProvider {
  return {
    name: 'keccak256',
    hash,
    leafWire: same,
    leafFromWire: exactly(128, 'a leaf opening'),
    rootWire: same,
    rootFromWire: exactly(64, 'the root node'),
    leafWireLength: 128,
    rootWireLength: 64,
    emptyLeafWire: new Uint8Array(128),
    maxHKey: new Uint8Array(32).fill(0xff),
    accountKey: (address) => hash(padWord(address)),
    storageKey: (slot) => hash(padWord(slot)),
    accountValue: hash,
    storageValue: hash,
    code: hash,
  };
}

/** keccak256 with the tree's own implementation (fast path for building and serving). */
export const keccakHashProvider: HashProvider = keccakProvider(keccak256);

/** keccak256 through ethers: the reference the verifier uses, same output as `keccakHashProvider`. */
export const ethersKeccakHashProvider: HashProvider = keccakProvider((data) => getBytes(ethersKeccak256(data)));
