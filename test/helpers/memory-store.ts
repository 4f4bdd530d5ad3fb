import type { Bytes } from '../../src/state/bytes.js';
import { floorIndex, type BatchingStore, type StagedBlock } from '../../src/state/staged-store.js';
import type {
  BlockRecord,
  FinalizationRecord,
  KeyEntry,
  StateReader,
  TreeId,
  TreeWrites,
} from '../../src/state/store.js';

/**
 * In-memory VersionedStore: the same versioning rules as the Postgres store (src/state/pg-store.ts), for tests and as
 * the benchmark baseline. Versions of a row are kept in block order.
 */
interface Version<T> {
  block: bigint;
  value: T | null;
}

function latest<T>(versions: Version<T>[] | undefined, block: bigint): T | null | undefined {
  return versions?.findLast((v) => v.block <= block)?.value;
}

function put<T>(versions: Version<T>[], block: bigint, value: T | null): void {
  const last = versions[versions.length - 1];
  if (last && last.block === block) last.value = value;
  else if (last && last.block > block)
    throw new Error(`write at block ${block} below a version at block ${last.block}`);
  else versions.push({ block, value });
}

/** Drops versions no block ≥ floor can see; returns how many were dropped. */
function compact<T>(versions: Version<T>[], floor: bigint): number {
  const keep = versions.findLastIndex((v) => v.block <= floor);
  if (keep < 0) return 0;
  const drop = versions[keep]!.value === null ? keep + 1 : keep;
  versions.splice(0, drop);
  return drop;
}

class MemoryTree {
  nodes = new Map<number, Version<Bytes>[]>();
  keys = new Map<string, Version<number>[]>();
  /** Every hKey with versions, sorted (fixed-length lowercase hex: string order is numeric order). */
  sorted: string[] = [];
  pending: string[] = [];

  flushSorted(): void {
    if (this.pending.length === 0) return;
    const add = [...new Set(this.pending)].sort();
    this.pending = [];
    const out: string[] = [];
    let i = 0;
    let j = 0;
    while (i < this.sorted.length || j < add.length) {
      if (j >= add.length || (i < this.sorted.length && this.sorted[i]! < add[j]!)) out.push(this.sorted[i++]!);
      else out.push(add[j++]!);
    }
    this.sorted = out;
  }
}

export class MemoryStore implements BatchingStore {
  private trees = new Map<TreeId, MemoryTree>();
  private blocks = new Map<bigint, BlockRecord>();
  private headNumber: bigint | undefined;
  private meta = new Map<string, string>();
  private finalizations = new Map<bigint, FinalizationRecord>();

  private tree(id: TreeId): MemoryTree {
    let t = this.trees.get(id);
    if (!t) this.trees.set(id, (t = new MemoryTree()));
    return t;
  }

  async read<T>(block: bigint, fn: (reader: StateReader) => Promise<T>): Promise<T> {
    return fn(this.reader(block));
  }

  private reader(block: bigint): StateReader {
    return {
      block,
      nodes: async (tree, positions) => {
        const t = this.trees.get(tree);
        const out = new Map<number, Bytes>();
        if (!t) return out;
        for (const pos of positions) {
          const v = latest(t.nodes.get(pos), block);
          if (v) out.set(pos, v);
        }
        return out;
      },
      floorKeys: async (tree, hKeys) => {
        const t = this.trees.get(tree);
        t?.flushSorted();
        const out = new Map<string, KeyEntry | undefined>();
        for (const hKey of hKeys) {
          let found: KeyEntry | undefined;
          // The greatest key ≤ hKey, then down to the first key live at this block.
          for (let at = t ? floorIndex(t.sorted, hKey) : -1; t && at >= 0 && !found; at--) {
            const idx = latest(t.keys.get(t.sorted[at]!), block);
            if (idx !== null && idx !== undefined) found = { hKey: t.sorted[at]!, leafIndex: idx };
          }
          out.set(hKey, found);
        }
        return out;
      },
      liveRows: async (tree) => {
        const t = this.trees.get(tree);
        if (!t) return { positions: [], hKeys: [] };
        const positions = [...t.nodes].filter(([, v]) => latest(v, block)).map(([p]) => p);
        const hKeys = [...t.keys].filter(([, v]) => (latest(v, block) ?? null) !== null).map(([k]) => k);
        return { positions, hKeys };
      },
    };
  }

  async commit(block: BlockRecord, writes: Map<TreeId, TreeWrites>): Promise<void> {
    if (this.headNumber !== undefined && block.number <= this.headNumber) {
      throw new Error(`block ${block.number} is not above the head ${this.headNumber}; roll back first`);
    }
    for (const [id, w] of writes) {
      const t = this.tree(id);
      for (const [pos, value] of w.nodes) {
        let v = t.nodes.get(pos);
        if (!v) t.nodes.set(pos, (v = []));
        put(v, block.number, value);
      }
      for (const [hKey, idx] of w.keys) {
        let v = t.keys.get(hKey);
        if (!v) {
          t.keys.set(hKey, (v = []));
          t.pending.push(hKey);
        }
        put(v, block.number, idx);
      }
    }
    this.blocks.set(block.number, block);
    this.headNumber = block.number;
  }

  /** Same as committing the blocks one by one (memory has no transactions to save). */
  async commitBlocks(blocks: readonly StagedBlock[]): Promise<void> {
    for (const { block, writes } of blocks) await this.commit(block, writes);
  }

  async head(): Promise<BlockRecord | undefined> {
    return this.headNumber === undefined ? undefined : this.blocks.get(this.headNumber);
  }

  async block(number: bigint): Promise<BlockRecord | undefined> {
    return this.blocks.get(number);
  }

  async rollback(block: bigint): Promise<void> {
    this.sweep((v) => {
      while (v.length > 0 && v[v.length - 1]!.block > block) v.pop();
      return 0;
    });
    for (const n of [...this.blocks.keys()]) if (n > block) this.blocks.delete(n);
    const remaining = [...this.blocks.keys()];
    this.headNumber = remaining.length === 0 ? undefined : remaining.reduce((a, b) => (a > b ? a : b));
  }

  async prune(floor: bigint): Promise<number> {
    const removed = this.sweep((v) => compact(v, floor));
    for (const n of [...this.blocks.keys()]) if (n < floor) this.blocks.delete(n);
    return removed;
  }

  /** Edits every row's versions (rollback, prune), drops the rows and trees left empty; sums what `edit` returns. */
  private sweep(edit: (versions: Version<unknown>[]) => number): number {
    let sum = 0;
    for (const [id, t] of this.trees) {
      for (const m of [t.nodes, t.keys] as Map<number | string, Version<unknown>[]>[]) {
        for (const [k, v] of m) {
          sum += edit(v);
          if (v.length === 0) m.delete(k);
        }
      }
      t.flushSorted();
      t.sorted = t.sorted.filter((k) => t.keys.has(k));
      if (t.nodes.size === 0 && t.keys.size === 0) this.trees.delete(id);
    }
    return sum;
  }

  async getMeta(key: string): Promise<string | undefined> {
    return this.meta.get(key);
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.meta.set(key, value);
  }

  async recordFinalization(rec: FinalizationRecord): Promise<void> {
    this.finalizations.set(rec.l2Block, rec);
  }

  async finalization(l2Block: bigint): Promise<FinalizationRecord | undefined> {
    return this.finalizations.get(l2Block);
  }
}
