import type { Bytes } from './bytes.js';
import type {
  BlockRecord,
  FinalizationRecord,
  KeyEntry,
  ReadOptions,
  StateReader,
  TreeId,
  TreeWrites,
  VersionedStore,
} from './store.js';

/** One applied block waiting to be written. */
export interface StagedBlock {
  block: BlockRecord;
  writes: Map<TreeId, TreeWrites>;
}

/** The underlying store must be able to write several blocks in one transaction. */
export interface BatchingStore extends VersionedStore {
  commitBlocks(blocks: readonly StagedBlock[]): Promise<void>;
  /**
   * Optional: a reader at the store's head that runs each call as its own statement, outside any
   * transaction. Exact for the one writer (the ingest holds the advisory lock, and nothing else changes
   * what its head reads: pruning only drops versions no block at or above the floor can see). The
   * staged store uses it so a block applied mostly from memory holds no database connection (on PGlite,
   * the one connection every service of the process shares) while it hashes.
   */
  headReader?(block: bigint): StateReader;
}

/** What is known of one tree at the head: staged writes and rows read through. */
interface TreeOverlay {
  /** Value per position at the head (null = cleared or empty). */
  nodes: Map<number, Bytes | null>;
  /** Leaf index per hKey at the head (null = deleted). */
  keys: Map<string, number | null>;
  /** The hKeys of `keys`, ascending, for floor lookups. */
  sorted: string[];
  /** `keys` holds every live key of the tree: floors are answered from memory. */
  complete: boolean;
}

/** Trees with at most this many keys are held whole in memory (their floors need no database read). */
const WHOLE_TREE_KEYS = 20_000;
/** Rows known at the head beyond which the cache is dropped after a flush (about 200 bytes each). */
const MAX_CACHED_ROWS = 300_000;

const below = (hKey: string): string | undefined => {
  const n = BigInt(hKey);
  return n === 0n ? undefined : `0x${(n - 1n).toString(16).padStart(64, '0')}`;
};

/** Greatest index i with sorted[i] ≤ key (-1 when none). */
export function floorIndex(sorted: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length - 1;
  let at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= key) {
      at = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return at;
}

/** The live key with the greatest hKey ≤ k among the known keys. */
function stagedFloor(o: TreeOverlay, k: string): KeyEntry | undefined {
  for (let i = floorIndex(o.sorted, k); i >= 0; i--) {
    const idx = o.keys.get(o.sorted[i]!);
    if (idx !== null && idx !== undefined) return { hKey: o.sorted[i]!, leafIndex: idx };
  }
  return undefined;
}

/**
 * The ingest's view of the head, over the underlying store:
 *
 * - write-behind: blocks are applied on top of the head in memory and `flush` writes all of them in one
 *   transaction, instead of one transaction per block. Every block keeps its own row versions (the
 *   underlying store ends up exactly as if the blocks had been committed one by one), so proofs at any
 *   of them and reorg rollback stay exact. Until `flush`, nothing staged is visible to other readers.
 * - read-through at the head: rows read at the head stay known (with what is staged, they are the head's
 *   rows), and small trees' keys are held whole, so applying the next block mostly reads memory. This is
 *   exact only while this instance is the one writer: `sync` (each step) drops it all when the underlying
 *   head is not the one this instance wrote, and rollback and `discard` (a failed step) drop it too.
 *
 * Reads are served at the head (what ingest needs: the next block applies on top of it) or at blocks the
 * underlying store already holds.
 */
export class StagedStore implements VersionedStore {
  private staged: StagedBlock[] = [];
  private trees = new Map<TreeId, TreeOverlay>();
  private baseHead: BlockRecord | undefined;
  private baseHeadLoaded = false;
  private rows = 0;
  /** Rows (and keys) known of the head across all trees. */
  private cached = 0;

  constructor(readonly base: BatchingStore) {}

  /** Blocks applied but not yet written. */
  get pendingBlocks(): number {
    return this.staged.length;
  }

  /** Rows (node and key versions) applied but not yet written: the memory the batch holds. */
  get pendingRows(): number {
    return this.rows;
  }

  /** Writes every staged block in one transaction of the underlying store. */
  async flush(): Promise<void> {
    if (this.staged.length === 0) return;
    const blocks = this.staged;
    await this.base.commitBlocks(blocks);
    this.baseHead = blocks[blocks.length - 1]!.block;
    this.baseHeadLoaded = true;
    this.staged = [];
    this.rows = 0;
    // The staged rows are now the head's rows on disk too: they stay known, within a bound.
    if (this.cached > MAX_CACHED_ROWS) {
      this.trees = new Map();
      this.cached = 0;
    }
  }

  /** Forgets the staged blocks (their transaction never happened) and everything known of the head. */
  discard(): void {
    this.staged = [];
    this.rows = 0;
    this.trees = new Map();
    this.cached = 0;
    this.baseHeadLoaded = false;
  }

  /**
   * Before a step: what is known of the head stays only if the underlying head is still the block this
   * instance last wrote (another writer, or a rollback elsewhere, would make it stale).
   */
  async sync(): Promise<void> {
    if (this.staged.length > 0) throw new Error('staged store: sync with blocks staged');
    const known = this.baseHeadLoaded ? this.baseHead : undefined;
    const now = await this.base.head();
    if (!known || !now || known.number !== now.number || known.hash !== now.hash) this.discard();
    this.baseHead = now;
    this.baseHeadLoaded = true;
  }

  private async underlyingHead(): Promise<BlockRecord | undefined> {
    if (!this.baseHeadLoaded) {
      this.baseHead = await this.base.head();
      this.baseHeadLoaded = true;
    }
    return this.baseHead;
  }

  async head(): Promise<BlockRecord | undefined> {
    return this.staged.length > 0 ? this.staged[this.staged.length - 1]!.block : this.underlyingHead();
  }

  async block(number: bigint): Promise<BlockRecord | undefined> {
    const mine = this.staged.find((s) => s.block.number === number);
    return mine ? mine.block : this.base.block(number);
  }

  async read<T>(block: bigint, fn: (reader: StateReader) => Promise<T>, options?: ReadOptions): Promise<T> {
    const baseAt = (await this.underlyingHead())?.number;
    const top = this.staged[this.staged.length - 1]?.block.number ?? baseAt;
    if (top === undefined) return this.base.read(block, fn); // an empty store: nothing to know yet
    if (block !== top || (options?.settled && this.staged.length === 0)) {
      if (baseAt !== undefined && block <= baseAt) return this.base.read(block, fn, options);
      throw new Error(
        `staged store: block ${block} is staged below the staged head ${top} and cannot be read until flushed`,
      );
    }
    // Nothing below the staged blocks yet (genesis is staged): the underlying store has no rows at all.
    if (this.base.headReader) return fn(this.overlay(this.base.headReader(baseAt ?? 0n), block));
    return this.base.read(baseAt ?? 0n, (under) => fn(this.overlay(under, block)));
  }

  private tree(id: TreeId): TreeOverlay {
    let o = this.trees.get(id);
    if (!o) this.trees.set(id, (o = { nodes: new Map(), keys: new Map(), sorted: [], complete: false }));
    return o;
  }

  private setKey(o: TreeOverlay, k: string, v: number | null): void {
    if (!o.keys.has(k)) {
      o.sorted.splice(floorIndex(o.sorted, k) + 1, 0, k);
      this.cached++;
    }
    o.keys.set(k, v);
  }

  /** Loads a small tree's keys whole (once), so its floors come from memory. */
  private async loadKeys(under: StateReader, id: TreeId, o: TreeOverlay): Promise<void> {
    if (o.complete || !under.keysUpTo) return;
    const all = await under.keysUpTo(id, WHOLE_TREE_KEYS);
    if (!all) return;
    const staged = new Map(o.keys);
    o.keys = new Map();
    o.sorted = [];
    for (const e of all) o.keys.set(e.hKey, e.leafIndex);
    // Staged changes win over what the underlying store has.
    for (const [k, v] of staged) o.keys.set(k, v);
    o.sorted = [...o.keys.keys()].sort();
    this.cached += o.keys.size - staged.size;
    o.complete = true;
  }

  private overlay(under: StateReader, block: bigint): StateReader {
    return {
      block,
      nodes: async (tree, positions) => {
        const o = this.tree(tree);
        const out = new Map<number, Bytes>();
        const rest: number[] = [];
        for (const p of positions) {
          if (!o.nodes.has(p)) rest.push(p);
          else {
            const v = o.nodes.get(p);
            if (v) out.set(p, v);
          }
        }
        if (rest.length > 0) {
          const got = await under.nodes(tree, rest);
          for (const p of rest) {
            const v = got.get(p) ?? null;
            if (!o.nodes.has(p)) this.cached++;
            o.nodes.set(p, v);
            if (v) out.set(p, v);
          }
        }
        return out;
      },
      floorKeys: async (tree, hKeys) => {
        const o = this.tree(tree);
        await this.loadKeys(under, tree, o);
        if (o.complete) {
          const out = new Map<string, KeyEntry | undefined>();
          for (const k of hKeys) out.set(k, stagedFloor(o, k));
          return out;
        }
        // The underlying floor, stepping below keys the staged blocks deleted (rare: one extra round per deleted
        // floor).
        const out = new Map<string, KeyEntry | undefined>();
        const baseFloor = new Map<string, KeyEntry | undefined>();
        let ask = new Map(hKeys.map((k) => [k, k] as const));
        while (ask.size > 0) {
          const got = await under.floorKeys(tree, [...new Set(ask.values())]);
          const next = new Map<string, string>();
          for (const [k, q] of ask) {
            const f = got.get(q);
            if (f && o.keys.has(f.hKey) && o.keys.get(f.hKey) === null) {
              const lower = below(f.hKey);
              if (lower !== undefined) next.set(k, lower);
              else baseFloor.set(k, undefined);
            } else baseFloor.set(k, f);
          }
          ask = next;
        }
        for (const k of hKeys) {
          const staged = stagedFloor(o, k);
          const b = baseFloor.get(k);
          // A live staged key at or above the underlying floor wins (it also carries the current index).
          out.set(k, staged && (!b || staged.hKey >= b.hKey) ? staged : b);
        }
        return out;
      },
      liveRows: async (tree) => {
        const o = this.trees.get(tree);
        const live = await under.liveRows(tree);
        if (!o) return live;
        const positions = new Set(live.positions);
        for (const [p, v] of o.nodes) {
          if (v) positions.add(p);
          else positions.delete(p);
        }
        const hKeys = new Set(live.hKeys);
        for (const [k, v] of o.keys) {
          if (v === null) hKeys.delete(k);
          else hKeys.add(k);
        }
        return { positions: [...positions], hKeys: [...hKeys] };
      },
    };
  }

  async commit(block: BlockRecord, writes: Map<TreeId, TreeWrites>): Promise<void> {
    const head = await this.head();
    if (head && block.number <= head.number)
      throw new Error(`block ${block.number} is not above the head ${head.number}; roll back first`);
    for (const [tree, w] of writes) {
      const o = this.tree(tree);
      for (const [p, v] of w.nodes) {
        if (!o.nodes.has(p)) this.cached++;
        o.nodes.set(p, v);
      }
      for (const [k, v] of w.keys) this.setKey(o, k, v);
      this.rows += w.nodes.size + w.keys.size;
    }
    this.staged.push({ block, writes });
  }

  /** Writes what is staged, then rolls the underlying store back (a reorg is rare; exactness first). */
  async rollback(block: bigint): Promise<void> {
    await this.flush();
    await this.base.rollback(block);
    this.discard();
  }

  // The rest goes straight to the underlying store: pruning, meta and finalizations are never staged.
  readonly prune = (floor: bigint) => this.base.prune(floor);
  readonly getMeta = (key: string) => this.base.getMeta(key);
  readonly setMeta = (key: string, value: string) => this.base.setMeta(key, value);
  readonly recordFinalization = (rec: FinalizationRecord) => this.base.recordFinalization(rec);
  readonly finalization = (l2Block: bigint) => this.base.finalization(l2Block);
}
