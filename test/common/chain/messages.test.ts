import { describe, expect, it } from 'vitest';
import { keccak256, concat, ZeroHash, toBeHex } from 'ethers';
import { MessageMerkleTree, messageTrees, messageHash } from '../../../src/common/chain/messages.js';
import { rootFromProof, nextRollingHash } from '../../helpers/messages.js';

const leaf = (i: number) => keccak256(toBeHex(i + 1, 32));
const pair = (a: string, b: string) => keccak256(concat([a, b]));

describe('message Merkle trees', () => {
  it('behavior: the root of a padded tree equals the naive full-tree computation', () => {
    const leaves = [leaf(0), leaf(1), leaf(2)];
    const full = [...leaves, ...Array<string>(8 - leaves.length).fill(ZeroHash)];
    let level = full;
    while (level.length > 1) level = level.flatMap((_, i) => (i % 2 === 0 ? [pair(level[i]!, level[i + 1]!)] : []));
    expect(new MessageMerkleTree(leaves, 3).root).toBe(level[0]);
  });

  it('behavior: every leaf proof recomputes the root; a wrong index or sibling does not', () => {
    const leaves = Array.from({ length: 11 }, (_, i) => leaf(i));
    const tree = new MessageMerkleTree(leaves, 4);
    leaves.forEach((l, i) => {
      const proof = tree.proof(i);
      expect(proof).toHaveLength(4);
      expect(rootFromProof(l, i, proof)).toBe(tree.root);
      expect(rootFromProof(l, i ^ 1, proof)).not.toBe(tree.root);
      expect(rootFromProof(l, i, [leaf(99), ...proof.slice(1)])).not.toBe(tree.root);
    });
  });

  it('behavior: messages are chunked into trees of 2^depth leaves in order', () => {
    const hashes = Array.from({ length: 70 }, (_, i) => leaf(i));
    const trees = messageTrees(hashes, 5);
    expect(trees).toHaveLength(3);
    expect(trees[2]!.root).toBe(new MessageMerkleTree(hashes.slice(64), 5).root);
  });

  it('error: depth and leaf bounds are enforced', () => {
    expect(() => new MessageMerkleTree([], 0)).toThrow('tree depth must be 1..32');
    expect(() => new MessageMerkleTree([leaf(0), leaf(1), leaf(2)], 1)).toThrow(
      '3 leaves do not fit a tree of depth 1',
    );
    expect(() => new MessageMerkleTree([leaf(0)], 2).proof(4)).toThrow('leaf index 4 out of range');
  });

  it('behavior: rolling hash and message hash follow abi.encode', () => {
    expect(nextRollingHash(ZeroHash, leaf(0))).toBe(keccak256(concat([ZeroHash, leaf(0)])));
    const h = messageHash({
      from: `0x${'11'.repeat(20)}`,
      to: `0x${'22'.repeat(20)}`,
      fee: 1n,
      value: 2n,
      nonce: 3n,
      calldata: '0x',
    });
    expect(h).toMatch(/^0x[0-9a-f]{64}$/);
  });
});
