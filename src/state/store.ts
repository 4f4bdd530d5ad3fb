import type { Bytes } from './bytes.js';

/**
 * The versioned storage behind the state trees. Every row is written "at" the L2 block whose state diff
 * produced it and never updated in place, so a reader at block N sees, for each position, the latest
 * version ≤ N: proofs at any retained block read exactly the nodes of that block while ingest writes
 * newer ones. Reorgs delete the versions above the common ancestor; pruning drops versions no retained
 * block can see (below the retention floor and superseded at or below it).
 *
 * Two kinds of rows per tree:
 * - nodes: position → bytes (internal node left‖right, leaf opening‖raw value, the root node), null = cleared;
 * - keys: hKey (0x + 64 lowercase hex, so string order is numeric order) → leaf index, null = deleted.
 */

/** '' is the account tree; a storage tree is named by its account's lowercase 0x address. */
export type TreeId = string;
export const ACCOUNT_TREE: TreeId = '';

export interface KeyEntry {
  hKey: string;
  leafIndex: number;
}

/** A consistent view of every tree as of one block. */
export interface StateReader {
  readonly block: bigint;
  /** Rows at the given positions; cleared or never-written positions are absent from the map. */
  nodes(tree: TreeId, positions: readonly number[]): Promise<Map<number, Bytes>>;
  /** For each hKey, the live key with the greatest hKey ≤ it (undefined when none: the head sentinel precedes it). */
  floorKeys(tree: TreeId, hKeys: readonly string[]): Promise<Map<string, KeyEntry | undefined>>;
  /** Every live node position and key of a tree (to clear a deleted account's storage). */
  liveRows(tree: TreeId): Promise<{ positions: number[]; hKeys: string[] }>;
  /** Optional: every live key of a tree in hKey order, or undefined when it has more than `limit`. */
  keysUpTo?(tree: TreeId, limit: number): Promise<KeyEntry[] | undefined>;
}

export interface TreeWrites {
  nodes: Map<number, Bytes | null>;
  keys: Map<string, number | null>;
}

export interface BlockRecord {
  number: bigint;
  hash: string;
  parentHash: string;
  /** Root of the account tree after the block. */
  root: string;
}

export interface FinalizationRecord {
  l2Block: bigint;
  stateRoot: string;
  l1Block: bigint;
  l1TxHash: string;
}

export interface ReadOptions {
  settled?: boolean;
}

/** One key to prove: its tree and hashed key. */
export interface ProofRequest {
  tree: TreeId;
  hKey: string;
}

/**
 * What the proofs of some keys read at one block, fetched ahead in one go: per tree, the floor key of each
 * requested hKey and the node rows (null: cleared or never written) at the positions the proofs visit.
 */
export interface ProofReads {
  floors: Map<TreeId, Map<string, KeyEntry | undefined>>;
  nodes: Map<TreeId, Map<number, Bytes | null>>;
}

export interface VersionedStore {
  /**
   * Runs `fn` against a snapshot as of `block` (one read transaction on Postgres, so pruning cannot race it).
   * `settled`: the caller guarantees `block` can no longer change (finalized on L1 and ingested: rollback
   * never reaches it), so the store may answer from rows it read earlier at settled blocks.
   */
  read<T>(block: bigint, fn: (reader: StateReader) => Promise<T>, options?: ReadOptions): Promise<T>;
  /**
   * Optional: everything the proofs of `requests` at `block` read, in one statement (one consistent
   * snapshot and one round trip instead of a read transaction with a statement per step). The rows are
   * a prediction of the proof's path; a proof that needs a row outside them is built through `read`.
   */
  proofReads?(block: bigint, requests: readonly ProofRequest[]): Promise<ProofReads>;
  /** Writes a block's rows and its record atomically (the record doubles as ingest progress). */
  commit(block: BlockRecord, writes: Map<TreeId, TreeWrites>): Promise<void>;
  /** The last committed block (the head), or undefined before the first. */
  head(): Promise<BlockRecord | undefined>;
  block(number: bigint): Promise<BlockRecord | undefined>;
  /** Deletes every version and block record above `block` (reorg). */
  rollback(block: bigint): Promise<void>;
  /** Drops versions that no block ≥ floor can read; returns the number of rows removed. */
  prune(floor: bigint): Promise<number>;
  getMeta(key: string): Promise<string | undefined>;
  setMeta(key: string, value: string): Promise<void>;
  recordFinalization(rec: FinalizationRecord): Promise<void>;
  finalization(l2Block: bigint): Promise<FinalizationRecord | undefined>;
}
