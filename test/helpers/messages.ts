import { AbiCoder, keccak256, concat } from 'ethers';

/**
 * The tests' side of the message-service conventions (src/common/chain/messages.ts holds what the services
 * use): the rolling hash of the L1→L2 stream and a root recomputed from a proof, as the contracts compute them.
 */

/** rollingHash[n] = keccak256(abi.encode(rollingHash[n-1], messageHash[n])); rollingHash[0] = 0. */
export function nextRollingHash(previous: string, hash: string): string {
  return keccak256(AbiCoder.defaultAbiCoder().encode(['bytes32', 'bytes32'], [previous, hash]));
}

/** Recomputes a root from a leaf and its proof (bit i of leafIndex: 0 = running node on the left). */
export function rootFromProof(leaf: string, leafIndex: number, proof: readonly string[]): string {
  let node = leaf;
  proof.forEach((sibling, level) => {
    node = ((leafIndex >> level) & 1) === 0 ? keccak256(concat([node, sibling])) : keccak256(concat([sibling, node]));
  });
  return node;
}
