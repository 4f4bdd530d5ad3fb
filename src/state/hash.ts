import { getBytes, keccak256 as ethersKeccak256 } from 'ethers';
import { keccak256 } from '../common/eth/keccak.js';

/**
 * The tree's hash function, behind an interface so a production hash (a SNARK-friendly one, say) can be
 * swapped in without touching the tree, the stores or the proof format: every node, leaf opening, key and
 * value hash goes through `hash`. Output is always 32 bytes.
 */
export interface HashProvider {
  readonly name: string;
  hash(data: Uint8Array): Uint8Array;
}

/** keccak256 with the tree's own implementation (fast path for building and serving). */
export const keccakHashProvider: HashProvider = { name: 'keccak256', hash: keccak256 };

/** keccak256 through ethers: the reference the verifier uses, same output as `keccakHashProvider`. */
export const ethersKeccakHashProvider: HashProvider = { name: 'keccak256', hash: (data) => getBytes(ethersKeccak256(data)) };
