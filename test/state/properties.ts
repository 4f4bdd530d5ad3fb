import fc from 'fast-check';
import { expect } from 'vitest';
import type { VersionedStore } from '../../src/state/store.js';
import { keccakHashProvider } from '../../src/state/hash.js';
import { verifyEntry } from '../../src/state/verify.js';
import {
  UNIVERSE,
  applyBlock,
  blockArb,
  checkAll,
  historyArb,
  newTree,
  proofOf,
  rootOf,
  tamperings,
  type Op,
} from './model.js';

/** Block numbers keep growing across runs because runs share one store (each on its own tree). */
let nextBlock = 0n;
async function syncBlock(store: VersionedStore): Promise<void> {
  const head = (await store.head())?.number;
  if (head !== undefined && head >= nextBlock) nextBlock = head + 1n;
}

const prng = (seed: number) => {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
};

/** Random histories against the Map model: every proof verifies, and every tampered proof fails. */
export async function proofsMatchModel(store: VersionedStore, numRuns: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(historyArb, fc.integer(), async (history, seed) => {
      await syncBlock(store);
      const tree = newTree();
      const rand = prng(seed);
      const model = new Map<number, number>();
      const snapshots: { block: bigint; root: string; model: Map<number, number> }[] = [];
      for (const ops of history) {
        const n = nextBlock++;
        const root = await applyBlock(store, tree, n, ops, model);
        expect(await rootOf(store, tree, n)).toBe(root);
        expect(await checkAll(store, tree, n, root, model)).toEqual([]);
        const { entry } = await proofOf(store, tree, n, Math.floor(rand() * UNIVERSE));
        for (const t of tamperings(entry, rand)) {
          expect(
            verifyEntry(root, t.entry, 'storage', keccakHashProvider).ok,
            `tampered (${t.what}) proof verified`,
          ).toBe(false);
        }
        snapshots.push({ block: n, root, model: new Map(model) });
      }
      // Older blocks still read as they were.
      for (const s of snapshots) expect(await checkAll(store, tree, s.block, s.root, s.model)).toEqual([]);
    }),
    { numRuns },
  );
}

const uniqueBlockArb = fc.uniqueArray(fc.record({ key: fc.nat(UNIVERSE - 1), value: fc.nat(3) }), {
  selector: (o) => o.key,
  maxLength: UNIVERSE,
});

/** The same starting tree and the same set of changes give the same root, whatever the order of the changes. */
export async function rootIgnoresOrder(
  makeStore: () => VersionedStore | Promise<VersionedStore>,
  numRuns: number,
): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(blockArb, { maxLength: 3 }), uniqueBlockArb, fc.integer(), async (prefix, ops, seed) => {
      const rand = prng(seed);
      const shuffled: Op[] = ops
        .map((o) => ({ o, r: rand() }))
        .sort((a, b) => a.r - b.r)
        .map((x) => x.o);
      const roots: string[] = [];
      for (const order of [ops, shuffled, [...ops].reverse()]) {
        const store = await makeStore();
        await syncBlock(store);
        const tree = newTree();
        const model = new Map<number, number>();
        for (const block of prefix) await applyBlock(store, tree, nextBlock++, block, model);
        roots.push(await applyBlock(store, tree, nextBlock++, order, model));
      }
      expect(new Set(roots).size).toBe(1);
    }),
    { numRuns },
  );
}

/** Pruning keeps every block at or above the floor readable; rolling back returns to an earlier block. */
export async function pruneAndRollback(store: VersionedStore, numRuns: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(
      fc.array(blockArb, { minLength: 3, maxLength: 6 }),
      fc.nat(),
      blockArb,
      async (history, pick, extra) => {
        await syncBlock(store);
        const tree = newTree();
        const model = new Map<number, number>();
        const snapshots: { block: bigint; root: string; model: Map<number, number> }[] = [];
        for (const ops of history) {
          const n = nextBlock++;
          snapshots.push({ block: n, root: await applyBlock(store, tree, n, ops, model), model: new Map(model) });
        }
        const keepFrom = pick % (snapshots.length - 1);
        const floor = snapshots[keepFrom]!.block;
        await store.prune(floor);
        for (const s of snapshots.slice(keepFrom))
          expect(await checkAll(store, tree, s.block, s.root, s.model)).toEqual([]);
        // Roll back to the floor, then build a different block on it.
        const base = snapshots[keepFrom]!;
        await store.rollback(base.block);
        expect((await store.head())?.number).toBe(base.block);
        expect(await checkAll(store, tree, base.block, base.root, base.model)).toEqual([]);
        const replay = new Map(base.model);
        const n = base.block + 1n;
        const root = await applyBlock(store, tree, n, extra, replay);
        expect(await checkAll(store, tree, n, root, replay)).toEqual([]);
        nextBlock = n + 1n;
      },
    ),
    { numRuns },
  );
}
