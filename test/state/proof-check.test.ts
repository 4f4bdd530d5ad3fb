import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toHex, word } from '../../src/state/bytes.js';
import { DEPTH, MAX_LEAVES } from '../../src/state/encoding.js';
import { createProofBackend } from '../../src/state/proof-backend.js';
import { WorldState } from '../../src/state/state.js';
import { verifyStateProof } from '../../src/state/verify.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { testCommon } from '../helpers/common.js';
import { call, chain, startTestRpc } from '../rpc/helpers.js';
import { usePgStore } from './pg-store-fixture.js';

/**
 * svc_getProof checks every answer against the block's state root before it leaves: a stored row of the
 * tree damaged in the database (PGlite, or PostgreSQL with DATABASE_HOST) gives the caller -32603 and the
 * operator an error log, never a proof that fails in the caller's verifier. Through the real endpoint.
 */
const SCHEMA = 'proof_check';
const addr = (i: number) => `0x${(0xb0 + i).toString(16).padStart(40, '0')}`;
const A = addr(1);
const SLOT = toHex(word(7));
const FINALIZED = 6n;

interface Entry {
  leafIndex: number;
  key: string;
}
interface StateProof {
  accountProof: Entry;
  storageProofs: Entry[];
}

describe('svc_getProof: proofs are checked before they leave', () => {
  const { store, db } = usePgStore(SCHEMA);
  let world: WorldState;
  let anvil: Anvil;
  let rpc: Awaited<ReturnType<typeof startTestRpc>>;
  const backendCommon = testCommon('error');

  beforeAll(async () => {
    world = new WorldState(store());
    for (let n = 0n; n <= 8n; n++) {
      // Several accounts so the proven leaf has siblings and inner nodes with rows; A keeps a storage slot.
      const changes = [1, 2, 3, 4, 5].map((i) => ({
        address: addr(i),
        deleted: false,
        balance: n * 10n + BigInt(i),
        storage: i === 1 ? new Map([[SLOT, word(Number(n) + 1)]]) : new Map(),
      }));
      await world.applyBlock({ number: n, hash: `0x${n}`, parentHash: '0x' }, changes);
    }
    const backend = createProofBackend(world, {
      latestFinalized: () => FINALIZED,
      ingestedHead: () => 8n,
      retainedFinalizedBlocks: 16,
      metrics: backendCommon.metrics,
      logger: backendCommon.logger,
    });
    ({ anvil } = await chain());
    rpc = await startTestRpc({
      db: db().client,
      schema: 'proof_check_rpc',
      upstreams: [anvil.url],
      proofBackend: backend,
    });
  }, 60_000);

  afterAll(async () => {
    await rpc?.stop();
    await anvil?.stop();
  });

  const proof = async () => call(rpc.url, 'svc_getProof', [A, [SLOT], 'finalized']);
  const raw = {
    raw: <T>(sql: string, bindings: readonly unknown[]) =>
      db().client.knex.raw(sql, bindings as never) as unknown as Promise<T>,
  };
  const table = (name: string) => `"${db().schema(SCHEMA)}"."${name}"`;
  /**
   * Flips one bit of byte `at` (negative: from the end) of every version ≤ the finalized block of a node row; twice
   * restores it.
   */
  const flip = async (tree: string, pos: number, at: number): Promise<number> => {
    const byte = at < 0 ? `length(value) + ${at}` : String(at);
    const r = await raw.raw<{ rowCount: number }>(
      `update ${table('nodes')} set value = set_byte(value, ${byte}, get_byte(value, ${byte}) # 1) where tree = decode(?, 'hex') and pos = ? and block <= ? and value is not null`,
      [tree, pos, FINALIZED.toString()],
    );
    return r.rowCount;
  };

  it("behavior: an intact tree answers, and the answer verifies against the block's root", async () => {
    const r = await proof();
    expect(r.error).toBeUndefined();
    expect(verifyStateProof((await world.rootAt(FINALIZED))!, r.result as never)).toMatchObject({
      ok: true,
      account: { balance: FINALIZED * 10n + 1n },
    });
  });

  it('error: each kind of damaged row gives -32603 and an error log naming what failed; repaired, the proof is served again', async () => {
    const good = (await proof()).result as StateProof;
    const leaf = good.accountProof.leafIndex;
    const storageLeaf = good.storageProofs[0]!.leafIndex;
    const tree = A.slice(2);
    const damages: [string, string, number, number, RegExp][] = [
      // The value bytes at the end of the leaf row: the path still hashes to the root, only the value check catches it.
      ['the account value (balance) in its leaf', '', leaf, -1, /accountProof.*does not commit to the given value/],
      ['the leaf opening (its prev index)', '', leaf, 31, /accountProof/],
      // So damaged it does not decode: the proof cannot even be built.
      ['the leaf opening (undecodable)', '', leaf, 0, /could not be built/],
      ['the sibling leaf', '', leaf ^ 1, 0, /accountProof/],
      ['an inner node at height 1', '', MAX_LEAVES + ((leaf >> 1) ^ 1), 3, /accountProof/],
      ['the root node', '', (DEPTH + 1) * MAX_LEAVES, 40, /accountProof.*root/],
      ['the storage slot value', tree, storageLeaf, -1, /storageProofs\[0\]/],
    ];
    for (const [what, t, pos, at, failed] of damages) {
      const before = backendCommon.logs.length;
      expect(await flip(t, pos, at), `${what}: rows changed`).toBeGreaterThan(0);
      try {
        const r = await proof();
        expect(r.result, what).toBeUndefined();
        expect(r.error, what).toEqual({
          code: -32603,
          message: `internal error: the proof for block ${FINALIZED} does not verify against its finalized state root; the operator has been told`,
        });
        const logged = backendCommon.logs.slice(before).join('');
        expect(logged, what).toMatch(/svc_getProof: a proof built from the stored state tree does not verify/);
        expect(logged, what).toMatch(failed);
      } finally {
        expect(await flip(t, pos, at)).toBeGreaterThan(0);
      }
      const again = await proof();
      expect(again.error, `${what}, repaired`).toBeUndefined();
      expect(again.result).toEqual(good);
    }
    const metrics = await backendCommon.metrics.getSingleMetricAsString('l2stack_state_proofs_total');
    expect(metrics).toMatch(new RegExp(`outcome="unverified"} ${damages.length}\\b`));
  });

  it('error: a damaged key row (the leaf index of the key) is caught too', async () => {
    const before = backendCommon.logs.length;
    const r = await raw.raw<{ rowCount: number }>(
      `update ${table('keys')} set leaf_index = leaf_index # 1 where tree = decode('', 'hex') and block <= ? and leaf_index > 1`,
      [FINALIZED.toString()],
    );
    expect(r.rowCount).toBeGreaterThan(0);
    try {
      expect((await proof()).error?.code).toBe(-32603);
      expect(backendCommon.logs.slice(before).join('')).toMatch(/does not verify/);
    } finally {
      await raw.raw(
        `update ${table('keys')} set leaf_index = leaf_index # 1 where tree = decode('', 'hex') and block <= ? and leaf_index > 1`,
        [FINALIZED.toString()],
      );
    }
    expect((await proof()).error).toBeUndefined();
  });

  it('error: a block whose root finalized on L1 differs from ours is not served; the same root as ours is', async () => {
    const rec = { l1Block: 100n, l1TxHash: `0x${'ab'.repeat(32)}` };
    await store().recordFinalization({ ...rec, l2Block: 3n, stateRoot: (await world.rootAt(3n))! });
    expect((await call(rpc.url, 'svc_getProof', [A, [], '0x3'])).error).toBeUndefined();
    await store().recordFinalization({ ...rec, l2Block: 5n, stateRoot: `0x${'12'.repeat(32)}` });
    const before = backendCommon.logs.length;
    const bad = await call(rpc.url, 'svc_getProof', [A, [], '0x5']);
    expect(bad.error?.code).toBe(-32603);
    expect(backendCommon.logs.slice(before).join('')).toMatch(/"rootSource":"L1"/);
    // Block 4 has no L1 record: checked against the root recorded when it was applied, and served.
    expect((await call(rpc.url, 'svc_getProof', [A, [], '0x4'])).error).toBeUndefined();
  });
});
