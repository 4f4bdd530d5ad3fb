import { beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../helpers/memory-store.js';
import { PgStore } from '../../src/state/pg-store.js';
import { databaseKind } from '../helpers/db.js';
import { usePgStore } from './pg-store-fixture.js';
import { applyBlock, checkAll, newTree } from './model.js';
import { proofsMatchModel, pruneAndRollback, rootIgnoresOrder } from './properties.js';

describe('state tree on the in-memory store', () => {
  it('behavior: every proof of random inserts/updates/deletes verifies and matches the Map model; tampered proofs fail', async () => {
    await proofsMatchModel(new MemoryStore(), 25);
  });

  it("behavior: the root does not depend on the order of a block's changes", async () => {
    await rootIgnoresOrder(() => new MemoryStore(), 30);
  });

  it('behavior: pruning keeps the retained blocks provable and rollback returns to an earlier block', async () => {
    await pruneAndRollback(new MemoryStore(), 20);
  });

  it('error: a block at or below the head is refused', async () => {
    const store = new MemoryStore();
    const tree = newTree();
    await applyBlock(store, tree, 5n, [{ key: 1, value: 1 }], new Map());
    await expect(applyBlock(store, tree, 5n, [{ key: 2, value: 1 }], new Map())).rejects.toThrow(
      /not above the head 5/,
    );
  });
});

describe(`state tree on the database store (${databaseKind()})`, () => {
  let store: PgStore;
  const fixture = usePgStore('state');
  beforeAll(() => {
    store = fixture.store();
  });

  it('behavior: every proof of random inserts/updates/deletes verifies and matches the Map model; tampered proofs fail', async () => {
    await proofsMatchModel(store, 5);
  });

  it("behavior: the root does not depend on the order of a block's changes (same roots as the memory store)", async () => {
    await rootIgnoresOrder(() => store, 4);
    // Same history on both stores gives the same roots.
    const mem = new MemoryStore();
    const tree = newTree();
    const [m1, m2] = [new Map<number, number>(), new Map<number, number>()];
    const head = (await store.head())!.number;
    for (let i = 1n; i <= 3n; i++) {
      const ops = [
        { key: Number(i), value: 1 },
        { key: Number(i) + 3, value: 2 },
        { key: 1, value: i === 3n ? 0 : 3 },
      ];
      const a = await applyBlock(store, tree, head + i, ops, m1);
      const b = await applyBlock(mem, tree, head + i, ops, m2);
      expect(a).toBe(b);
      expect(await checkAll(store, tree, head + i, a, m1)).toEqual([]);
    }
  });

  it('behavior: pruning keeps the retained blocks provable and rollback returns to an earlier block', async () => {
    await pruneAndRollback(store, 4);
  });
});
