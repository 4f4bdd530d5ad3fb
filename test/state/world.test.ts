import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { fromHex, toHex, word } from '../../src/state/bytes.js';
import { keccakHashProvider } from '../../src/state/hash.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { PgStore } from '../../src/state/pg-store.js';
import { WorldState, type AccountChange } from '../../src/state/state.js';
import type { VersionedStore } from '../../src/state/store.js';
import { verifyStateProof } from '../../src/state/verify.js';
import { databaseKind } from '../helpers/db.js';
import { usePgStore } from './pg-store-fixture.js';

/**
 * Accounts and their storage trees against a naive model: balances, slots (zero deletes), and whole
 * accounts deleted (their storage goes with them, and a re-created account starts with empty storage).
 */
const ACCOUNTS = 4;
const SLOTS = 4;
const addr = (i: number) => `0x${(0xa0 + i).toString(16).padStart(40, '0')}`;
const slot = (i: number) => toHex(word(i));

type Op =
  | { kind: 'balance'; a: number; v: number }
  | { kind: 'slot'; a: number; s: number; v: number }
  | { kind: 'delete'; a: number };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('balance' as const), a: fc.nat(ACCOUNTS - 1), v: fc.nat(3) }),
  fc.record({ kind: fc.constant('slot' as const), a: fc.nat(ACCOUNTS - 1), s: fc.nat(SLOTS - 1), v: fc.nat(2) }),
  fc.record({ kind: fc.constant('delete' as const), a: fc.nat(ACCOUNTS - 1) }),
);

interface ModelAccount {
  balance: bigint;
  storage: Map<number, number>;
}

/** One block = one op per account at most (the ingest folds a block into one net change per account). */
function toChanges(ops: Op[], model: Map<number, ModelAccount>): AccountChange[] {
  const byAccount = new Map<number, Op>();
  for (const o of ops) byAccount.set(o.a, o);
  const changes: AccountChange[] = [];
  for (const [a, o] of byAccount) {
    if (o.kind === 'delete') {
      changes.push({ address: addr(a), deleted: true, storage: new Map() });
      model.delete(a);
      continue;
    }
    const m = model.get(a) ?? { balance: 0n, storage: new Map() };
    model.set(a, m);
    if (o.kind === 'balance') {
      m.balance = BigInt(o.v);
      changes.push({ address: addr(a), deleted: false, balance: BigInt(o.v), storage: new Map() });
    } else {
      if (o.v === 0) m.storage.delete(o.s);
      else m.storage.set(o.s, o.v);
      changes.push({ address: addr(a), deleted: false, storage: new Map([[slot(o.s), word(o.v)]]) });
    }
  }
  return changes;
}

let blockNo = 0n;

async function check(store: VersionedStore, numRuns: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(opArb, { maxLength: 5 }), { minLength: 1, maxLength: 5 }), async (blocks) => {
      // Each run gets fresh accounts by starting from an empty world of its own.
      const world = new WorldState(store, keccakHashProvider);
      await store.rollback(-1n);
      const model = new Map<number, ModelAccount>();
      for (const ops of blocks) {
        const n = blockNo++;
        const root = await world.applyBlock(
          { number: n, hash: `0x${n.toString(16)}`, parentHash: '0x' },
          toChanges(ops, model),
        );
        for (let a = 0; a < ACCOUNTS; a++) {
          const p = await world.getProof(
            addr(a),
            Array.from({ length: SLOTS }, (_, s) => slot(s)),
            n,
          );
          const v = verifyStateProof(root, p, keccakHashProvider);
          if (!v.ok) throw new Error(`account ${a} at ${n}: ${v.failed}: ${v.reason}`);
          const m = model.get(a);
          expect(v.account !== undefined, `account ${a} exists`).toBe(m !== undefined);
          if (v.account) expect(v.account.balance).toBe(m!.balance);
          for (let s = 0; s < SLOTS; s++) {
            const e = p.storageProofs[s]!;
            const want = m?.storage.get(s);
            expect('leafIndex' in e, `account ${a} slot ${s}`).toBe(want !== undefined);
            if ('leafIndex' in e) expect(fromHex(e.proof.value)).toEqual(word(want!));
          }
        }
      }
    }),
    { numRuns },
  );
}

describe('world state (accounts + storage trees) on the in-memory store', () => {
  it('behavior: proofs of accounts and slots verify and match the model through balance/slot changes and account deletion', async () => {
    await check(new MemoryStore(), 30);
  });
});

describe(`world state on the database store (${databaseKind()})`, () => {
  let store: PgStore;
  const fixture = usePgStore('state_world');
  beforeAll(() => {
    store = fixture.store();
  });

  it('behavior: proofs of accounts and slots verify and match the model through balance/slot changes and account deletion', async () => {
    await check(store, 4);
  });
});
