import { describe, expect, it } from 'vitest';
import { fromHex, toHex } from '../../src/state/bytes.js';
import { decodeLeafOpening, treeConstants } from '../../src/state/encoding.js';
import { poseidon2HashProvider as h } from '../../src/state/linea-hash.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { proofEntryJson } from '../../src/state/state.js';
import { applyChanges, type KeyChange } from '../../src/state/tree.js';
import { proveKey } from '../../src/state/tree-read.js';
import { verifyInclusion, verifyStateProof } from '../../src/state/verify.js';
import { alteredProofs, lineaAccountKeys, lineaProofs, lineaRoots } from './linea-vectors.js';

const c = treeConstants(h);

/** Applies batches of changes to one tree, a block each, in a fresh memory store; returns the store and the root. */
async function build(
  tree: string,
  batches: KeyChange[][],
): Promise<{ store: MemoryStore; root: string; block: bigint }> {
  const store = new MemoryStore();
  let root = '';
  let n = 0n;
  for (const changes of batches) {
    const update = await store.read(n === 0n ? 0n : n - 1n, (r) => applyChanges(c, r, tree, changes));
    root = toHex(update.root);
    await store.commit(
      { number: n, hash: `0x${n.toString(16)}`, parentHash: `0x${(n - 1n).toString(16)}`, root },
      new Map([[tree, update.writes]]),
    );
    n++;
  }
  return { store, root, block: n - 1n };
}

describe('Linea state-tree format (Poseidon2)', () => {
  it("behavior: key and value hashes match Linea's published ones", () => {
    const vectors = lineaAccountKeys();
    for (const v of vectors) expect(toHex(h.accountKey(fromHex(v.input))), v.input).toBe(v.output);
    const roots = lineaRoots();
    const { accountProof, storageProofs } = lineaProofs();
    expect(toHex(h.accountKey(fromHex(accountProof.key)))).toBe(roots.ACCOUNT_KEY_HASH);
    expect(toHex(h.accountValue(fromHex(accountProof.proof.value)))).toBe(roots.ACCOUNT_VALUE_HASH);
    expect(toHex(h.storageKey(fromHex(storageProofs[0]!.key)))).toBe(roots.STORAGE_KEY_HASH);
    expect(toHex(h.storageValue(fromHex(storageProofs[0]!.proof.value)))).toBe(roots.STORAGE_VALUE_HASH);
    console.log(
      `Linea account-key vectors: ${vectors.length}/${vectors.length} match; 4/4 leaf key and value hashes match`,
    );
  });

  it('behavior: our verifier accepts every published proof against its root, and the whole result against the state root', () => {
    const roots = lineaRoots();
    const { accountProof, storageProofs } = lineaProofs();
    const acct = verifyInclusion(roots.STATE_ROOT, accountProof, 'account', h);
    expect(acct).toMatchObject({ ok: true });
    expect(acct.ok && toHex(acct.account!.storageRoot)).toBe(roots.STORAGE_ROOT);
    for (const p of storageProofs)
      expect(verifyInclusion(roots.STORAGE_ROOT, p, 'storage', h)).toMatchObject({ ok: true });
    expect(verifyStateProof(roots.STATE_ROOT, { accountProof, storageProofs }, h)).toMatchObject({
      ok: true,
      storageRoot: roots.STORAGE_ROOT,
    });
    console.log(`Linea proofs verified in TypeScript: ${1 + storageProofs.length}/${1 + storageProofs.length}`);
  });

  it('error: any altered byte of a published proof (node or value) fails verification', () => {
    const roots = lineaRoots();
    const { accountProof, storageProofs } = lineaProofs();
    const cases = [
      ...alteredProofs(accountProof).map((a) => ({ ...a, root: roots.STATE_ROOT, kind: 'account' as const })),
      ...storageProofs.flatMap((p) =>
        alteredProofs(p).map((a) => ({ ...a, root: roots.STORAGE_ROOT, kind: 'storage' as const })),
      ),
    ];
    for (const a of cases)
      expect(verifyInclusion(a.root, a.proof, a.kind, h).ok, `altered ${a.what} verified`).toBe(false);
    console.log(`altered published proofs rejected: ${cases.length}/${cases.length}`);
    expect(cases.length).toBeGreaterThan(400);
  });

  it("behavior: a tree built over the vectors' slot and accounts has the published roots and byte-equal proofs", async () => {
    const roots = lineaRoots();
    const { accountProof, storageProofs } = lineaProofs();
    const slot = storageProofs[0]!;
    const slotValue = fromHex(slot.proof.value);
    const storage = await build('0x' + '2f'.padEnd(40, '0'), [
      [{ hKey: toHex(h.storageKey(fromHex(slot.key))), value: slotValue, hValue: h.storageValue(slotValue) }],
    ]);
    expect(storage.root).toBe(roots.STORAGE_ROOT);
    const sProof = await storage.store.read(storage.block, (r) =>
      proveKey(c, r, '0x' + '2f'.padEnd(40, '0'), toHex(h.storageKey(fromHex(slot.key)))),
    );
    expect(proofEntryJson(slot.key, sProof)).toEqual({ key: slot.key, leafIndex: slot.leafIndex, proof: slot.proof });

    // Leaf 2 of the account tree is another account, published only as its opening (hKey, hValue): its
    // raw value is not needed for the tree's hashes. It went in first; the vectors' account second.
    const other = decodeLeafOpening(h.leafFromWire(fromHex(accountProof.proof.proofRelatedNodes[40]!)));
    const value = fromHex(accountProof.proof.value);
    const accounts = await build('accounts', [
      [{ hKey: toHex(other.hKey), value: new Uint8Array(192), hValue: other.hValue }],
      [{ hKey: toHex(h.accountKey(fromHex(accountProof.key))), value, hValue: h.accountValue(value) }],
    ]);
    expect(accounts.root).toBe(roots.STATE_ROOT);
    const aProof = await accounts.store.read(accounts.block, (r) =>
      proveKey(c, r, 'accounts', toHex(h.accountKey(fromHex(accountProof.key)))),
    );
    expect(proofEntryJson(accountProof.key, aProof)).toEqual(accountProof);
    console.log('Linea proofs rebuilt byte for byte: 2/2 (storage root and state root equal)');
  });
});
