import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { PgStore } from '../../src/state/pg-store.js';
import { ACCOUNT_TREE, type ProofRequest } from '../../src/state/store.js';
import { toHex } from '../../src/state/bytes.js';
import { applyChanges } from '../../src/state/tree.js';
import { proveFromReads, proveKey, proveKeysAt, type KeyProof } from '../../src/state/tree-read.js';
import { databaseKind, type openTestDb } from '../helpers/db.js';
import { usePgStore } from './pg-store-fixture.js';
import { UNIVERSE, applyBlock, blockArb, c, changesOf, hKeyOf, newTree } from './model.js';

/**
 * The one-statement proof (PgStore.proofReads) against the same proofs read a statement per step in a read
 * transaction: byte-identical results, for present and absent keys, at every block of random histories,
 * after pruning and rollback, for a tree never written, and several trees in one statement.
 */
const stepwise = (store: PgStore, block: bigint, requests: readonly ProofRequest[]): Promise<KeyProof[]> =>
  store.read(block, async (r) => {
    const out: KeyProof[] = [];
    for (const q of requests) out.push(await proveKey(c, r, q.tree, q.hKey));
    return out;
  });

describe(`one-statement proofs (${databaseKind()})`, () => {
  let db: Awaited<ReturnType<typeof openTestDb>>;
  let store: PgStore;
  let next = 0n;
  const fixture = usePgStore('state');
  beforeAll(() => {
    db = fixture.db();
    store = fixture.store();
  });

  /**
   * Every key of the universe (in `trees`) proven both ways at `block`; the one-statement reads must predict every row.
   */
  async function expectSame(block: bigint, trees: readonly string[]): Promise<void> {
    const requests = trees.flatMap((tree) => Array.from({ length: UNIVERSE }, (_, k) => ({ tree, hKey: hKeyOf(k) })));
    const fast = await proveFromReads(c, block, await store.proofReads(block, requests), requests);
    expect(fast, `the statement did not read every row of the proofs at ${block}`).toBeDefined();
    expect(fast).toEqual(await stepwise(store, block, requests));
  }

  it('behavior: random histories: every key at every block proves the same as the stepwise read, and after prune and rollback', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(blockArb, { minLength: 2, maxLength: 6 }), fc.nat(), async (history, pick) => {
        const tree = newTree();
        const blocks: bigint[] = [];
        const model = new Map<number, number>();
        for (const ops of history) {
          const n = next++;
          await applyBlock(store, tree, n, ops, model);
          blocks.push(n);
        }
        for (const b of blocks) await expectSame(b, [tree]);
        const floor = blocks[pick % blocks.length]!;
        await store.prune(floor);
        for (const b of blocks.filter((x) => x >= floor)) await expectSame(b, [tree]);
        await store.rollback(floor);
        next = floor + 1n;
        await expectSame(floor, [tree]);
      }),
      { numRuns: 6 },
    );
  });

  it('behavior: several trees in one statement, one of them never written (the empty-tree template), and the account tree', async () => {
    const [a, b, empty] = [newTree(), newTree(), newTree()];
    const n = next++;
    await applyBlock(
      store,
      a,
      n,
      [
        { key: 1, value: 1 },
        { key: 5, value: 2 },
      ],
      new Map(),
    );
    const m = next++;
    await applyBlock(store, b, m, [{ key: 3, value: 3 }], new Map());
    await expectSame(m, [a, b, empty, ACCOUNT_TREE]);
    await expectSame(n, [b]);
  });

  // The statement reads no node above (nextFreeNode - 1) >> h: after a reset (an account deleted and made again
  // in one block) the tree starts over smaller, above rows that held leaves until then.
  it('behavior: a tree cleared and rebuilt smaller proves the same as the stepwise read, before and after', async () => {
    const tree = newTree();
    const n = next++;
    await applyBlock(
      store,
      tree,
      n,
      Array.from({ length: UNIVERSE }, (_, k) => ({ key: k, value: 1 + (k % 3) })),
      new Map(),
    );
    const m = next++;
    const update = await store.read(n, (r) =>
      applyChanges(c, r, tree, changesOf([{ key: 3, value: 2 }]), { reset: true }),
    );
    await store.commit(
      { number: m, hash: `0x${m.toString(16)}`, parentHash: `0x${n.toString(16)}`, root: toHex(update.root) },
      new Map([[tree, update.writes]]),
    );
    await expectSame(n, [tree]);
    await expectSame(m, [tree]);
  });

  it('behavior: proveKeysAt gives the stepwise result even when the statement misses a row (it falls back to the read transaction)', async () => {
    const tree = newTree();
    const n = next++;
    await applyBlock(
      store,
      tree,
      n,
      [
        { key: 2, value: 1 },
        { key: 7, value: 3 },
      ],
      new Map(),
    );
    const requests = [0, 2, 4].map((k) => ({ tree, hKey: hKeyOf(k) }));
    let calls = 0;
    const lossy = Object.create(store, {
      proofReads: {
        value: async (block: bigint, reqs: readonly ProofRequest[]) => {
          calls++;
          const reads = await store.proofReads(block, reqs);
          reads.nodes.get(tree)!.delete(reads.nodes.get(tree)!.keys().next().value!);
          return reads;
        },
      },
    }) as PgStore;
    expect(await proveKeysAt(c, lossy, n, requests)).toEqual(await stepwise(store, n, requests));
    expect(calls).toBe(1);
  });

  // PGlite: the statement is PREPAREd once per session; a session that lost it (DEALLOCATE) gets it prepared again.
  it.runIf(databaseKind() === 'pglite')(
    'behavior: the proof statement is prepared again after the session dropped it',
    async () => {
      const tree = newTree();
      const n = next++;
      await applyBlock(store, tree, n, [{ key: 4, value: 2 }], new Map());
      await expectSame(n, [tree]);
      await db.client.knex.raw('deallocate all');
      await expectSame(n, [tree]);
    },
  );
});
