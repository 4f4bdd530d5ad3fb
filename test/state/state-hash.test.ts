import { describe, expect, it } from 'vitest';
import { loadStateConfig } from '../../src/state/config.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { WorldState } from '../../src/state/state.js';
import { STATE_HASH_META, StateHashMismatchError, hashProviderOf, pinStateHash } from '../../src/state/state-hash.js';
import { verifyStateProof } from '../../src/state/verify.js';
import { usePgStore } from './pg-store-fixture.js';

const base = {
  STATE_L2_RPC_URL: 'http://127.0.0.1:8546',
  STATE_L1_RPC_URL: 'http://127.0.0.1:8545',
  STATE_L1_MESSAGE_SERVICE: '0x00000000000000000000000000000000000000AA',
};
const A = '0x00000000000000000000000000000000000000a1';
const header = (n: bigint) => ({ number: n, hash: `0x${n.toString(16)}`, parentHash: `0x${(n - 1n).toString(16)}` });

describe('STATE_HASH', () => {
  it("args: poseidon2 (the chain's format) by default, keccak on request, anything else refused naming the choices", () => {
    expect(loadStateConfig(base).hash).toBe('poseidon2');
    expect(loadStateConfig({ ...base, STATE_HASH: 'keccak' }).hash).toBe('keccak');
    expect(() => loadStateConfig({ ...base, STATE_HASH: 'mimc' })).toThrow(
      /STATE_HASH: expected one of poseidon2, keccak/,
    );
  });

  it('behavior: a world state on poseidon2 serves proofs that verify under Poseidon2 and not under keccak', async () => {
    const world = new WorldState(new MemoryStore(), hashProviderOf('poseidon2'));
    const root = await world.applyBlock(header(0n), [
      {
        address: A,
        deleted: false,
        nonce: 1n,
        balance: 7n,
        code: new Uint8Array([0x60, 0x00]),
        storage: new Map([[`0x${'00'.repeat(31)}01`, new Uint8Array(32).fill(9)]]),
      },
    ]);
    const proof = await world.getProof(A, [`0x${'00'.repeat(31)}01`, `0x${'00'.repeat(31)}02`], 0n);
    expect(verifyStateProof(root, proof, hashProviderOf('poseidon2'))).toMatchObject({ ok: true });
    expect(verifyStateProof(root, proof, hashProviderOf('keccak')).ok).toBe(false);
    // Linea's wire format: a 96-byte root node and 192-byte leaf openings.
    const entry = proof.accountProof as { proof: { proofRelatedNodes: string[] } };
    expect([entry.proof.proofRelatedNodes[0]!.length, entry.proof.proofRelatedNodes[41]!.length]).toEqual([
      2 + 192,
      2 + 384,
    ]);
  });

  describe('stored with the tree (PgStore on the test database)', () => {
    const pg = usePgStore('state_hash_pin');

    it('error: the first start records the hash; a start with the other one refuses, naming both', async () => {
      const store = pg.store();
      await pinStateHash(store, 'poseidon2');
      expect(await store.getMeta(STATE_HASH_META)).toBe('poseidon2');
      await pinStateHash(store, 'poseidon2');
      const err = await pinStateHash(store, 'keccak').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StateHashMismatchError);
      expect((err as Error).message).toBe(
        "STATE_HASH is keccak but this database's state tree was built with poseidon2: set STATE_HASH=poseidon2, or point the state manager at an empty schema to build a keccak tree",
      );
    });
  });

  it('error: a tree with blocks and no record was built before the setting, with keccak', async () => {
    const store = new MemoryStore();
    await new WorldState(store).applyBlock(header(0n), [
      { address: A, deleted: false, balance: 1n, storage: new Map() },
    ]);
    await expect(pinStateHash(store, 'poseidon2')).rejects.toThrow(
      "STATE_HASH is poseidon2 but this database's state tree was built with keccak",
    );
    await pinStateHash(store, 'keccak');
    expect(await store.getMeta(STATE_HASH_META)).toBe('keccak');
  });
});
