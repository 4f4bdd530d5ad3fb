import { AbiCoder, keccak256, concat, ZeroHash } from 'ethers';

/**
 * The message-service conventions shared by the devnet contracts, the coordinator and the relayer (see specs/abi): hash
 * of a message and the sparse Merkle tree of L2→L1 message hashes whose roots are anchored on L1.
 */
export interface MessageFields {
  from: string;
  to: string;
  fee: bigint;
  value: bigint;
  nonce: bigint;
  calldata: string;
}

const coder = AbiCoder.defaultAbiCoder();

/** keccak256(abi.encode(from, to, fee, value, nonce, calldata)), as the contracts compute it. */
export function messageHash(m: MessageFields): string {
  return keccak256(
    coder.encode(
      ['address', 'address', 'uint256', 'uint256', 'uint256', 'bytes'],
      [m.from, m.to, m.fee, m.value, m.nonce, m.calldata],
    ),
  );
}

const hashPair = (left: string, right: string) => keccak256(concat([left, right]));

/** A full binary tree of depth `depth` over `leaves`, padded with zero hashes to 2^depth leaves. */
export class MessageMerkleTree {
  /** levels[0] are the leaves, levels[depth] = [root]. */
  private readonly levels: string[][];

  constructor(
    leaves: readonly string[],
    readonly depth: number,
  ) {
    if (!Number.isInteger(depth) || depth < 1 || depth > 32)
      throw new RangeError(`tree depth must be 1..32, got ${depth}`);
    const width = 2 ** depth;
    if (leaves.length > width) throw new RangeError(`${leaves.length} leaves do not fit a tree of depth ${depth}`);
    // Padding is kept implicit beyond the used leaves: an all-zero subtree has a known hash per level.
    const zero: string[] = [ZeroHash];
    for (let i = 1; i <= depth; i++) zero.push(hashPair(zero[i - 1]!, zero[i - 1]!));
    this.levels = [[...leaves]];
    for (let level = 1; level <= depth; level++) {
      const below = this.levels[level - 1]!;
      const row: string[] = [];
      for (let i = 0; i < Math.ceil(below.length / 2); i++) {
        row.push(hashPair(below[2 * i]!, below[2 * i + 1] ?? zero[level - 1]!));
      }
      if (row.length === 0) row.push(zero[level]!);
      this.levels.push(row);
    }
    this.zero = zero;
  }

  private readonly zero: string[];

  get root(): string {
    return this.levels[this.depth]![0]!;
  }

  /** Siblings from the leaf level up: proof[0] is the leaf's neighbour. */
  proof(leafIndex: number): string[] {
    if (leafIndex < 0 || leafIndex >= 2 ** this.depth)
      throw new RangeError(`leaf index ${leafIndex} out of range for depth ${this.depth}`);
    const proof: string[] = [];
    let index = leafIndex;
    for (let level = 0; level < this.depth; level++) {
      proof.push(this.levels[level]![index ^ 1] ?? this.zero[level]!);
      index >>= 1;
    }
    return proof;
  }
}

/** Splits ordered message hashes into trees of 2^depth leaves (the last one padded). */
export function messageTrees(hashes: readonly string[], depth: number): MessageMerkleTree[] {
  const width = 2 ** depth;
  const trees: MessageMerkleTree[] = [];
  for (let i = 0; i < hashes.length; i += width) trees.push(new MessageMerkleTree(hashes.slice(i, i + width), depth));
  return trees;
}
