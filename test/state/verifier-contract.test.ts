import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Wallet } from 'ethers';
import {
  SparseMerkleProofVerifier__factory,
  type SparseMerkleProofVerifier,
} from '../../generated/contracts/types/index.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { toHex, word } from '../../src/state/bytes.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { WorldState, type ProofEntryJson } from '../../src/state/state.js';
import { verifyStateProof } from '../../src/state/verify.js';

const KEY0 = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const A = '0x00000000000000000000000000000000000000a1';
const B = '0x00000000000000000000000000000000000000b2';
const ABSENT = '0x00000000000000000000000000000000000000c3';
const slot = (n: number) => toHex(word(n));

let anvil: Anvil;
let verifier: SparseMerkleProofVerifier;
const world = new WorldState(new MemoryStore());
let root: string;

const flip = (hex: string, at = 40): string =>
  `0x${hex.slice(2, at)}${((parseInt(hex[at]!, 16) + 1) % 16).toString(16)}${hex.slice(at + 1)}`;
type Inc = Extract<ProofEntryJson, { leafIndex: number }>;
type Non = Extract<ProofEntryJson, { leftLeafIndex: number }>;

beforeAll(async () => {
  anvil = await startAnvil({ port: 0, chainId: 31337 });
  const signer = new Wallet(KEY0, createProvider(anvil.url, 31337));
  verifier = await new SparseMerkleProofVerifier__factory(signer).deploy();
  await verifier.waitForDeployment();
  await world.applyBlock({ number: 0n, hash: '0x00', parentHash: '0x00' }, [
    {
      address: A,
      deleted: false,
      nonce: 3n,
      balance: 10n ** 18n,
      code: new Uint8Array([0x60, 0x00]),
      storage: new Map([
        [slot(1), word(42)],
        [slot(2), word(7)],
        [slot(9), word(1)],
      ]),
    },
    { address: B, deleted: false, balance: 5n, storage: new Map() },
  ]);
  root = await world.applyBlock({ number: 1n, hash: '0x01', parentHash: '0x00' }, [
    { address: A, deleted: false, storage: new Map([[slot(2), word(0)]]) },
  ]);
});
afterAll(async () => {
  await anvil?.stop();
});

describe('SparseMerkleProofVerifier (Solidity) on proofs from the TypeScript tree', () => {
  it('behavior: accepts an account proof and its storage proofs, rejects tampered ones', async () => {
    const p = await world.getProof(A, [slot(1)], 1n);
    expect(verifyStateProof(root, p).ok).toBe(true);
    const acct = p.accountProof as Inc;
    const nodes = acct.proof.proofRelatedNodes;
    expect(await verifier.verifyAccount(nodes, acct.leafIndex, root, A, acct.proof.value)).toBe(true);
    expect(
      await verifier.verifyAccount(
        nodes.map((n, i) => (i === 17 ? flip(n) : n)),
        acct.leafIndex,
        root,
        A,
        acct.proof.value,
      ),
    ).toBe(false);
    expect(await verifier.verifyAccount(nodes, acct.leafIndex + 1, root, A, acct.proof.value)).toBe(false);
    expect(await verifier.verifyAccount(nodes, acct.leafIndex, root, B, acct.proof.value)).toBe(false);
    expect(await verifier.verifyAccount(nodes, acct.leafIndex, root, A, flip(acct.proof.value, 60))).toBe(false);
    expect(await verifier.verifyAccount(nodes, acct.leafIndex, flip(root), A, acct.proof.value)).toBe(false);

    const storageRoot = await verifier.storageRootOf(acct.proof.value);
    const s = p.storageProofs[0] as Inc;
    expect(
      await verifier.verifyStorage(s.proof.proofRelatedNodes, s.leafIndex, storageRoot, slot(1), s.proof.value),
    ).toBe(true);
    expect(
      await verifier.verifyStorage(s.proof.proofRelatedNodes, s.leafIndex, storageRoot, slot(1), toHex(word(43))),
    ).toBe(false);
    expect(await verifier.verifyStorage(s.proof.proofRelatedNodes, s.leafIndex, root, slot(1), s.proof.value)).toBe(
      false,
    );
  });

  it('behavior: accepts absence proofs of a missing account and a cleared slot, rejects tampered ones', async () => {
    const p = await world.getProof(ABSENT, [], 1n);
    const a = p.accountProof as Non;
    expect('leftLeafIndex' in a).toBe(true);
    const args = [
      a.leftProof.proofRelatedNodes,
      a.leftLeafIndex,
      a.rightProof.proofRelatedNodes,
      a.rightLeafIndex,
    ] as const;
    expect(await verifier.verifyAccountAbsent(...args, root, ABSENT)).toBe(true);
    // The same neighbours do not prove that a present account is absent.
    const present = await world.getProof(A, [slot(2)], 1n);
    expect(await verifier.verifyAccountAbsent(...args, root, A)).toBe(false);
    expect(
      await verifier.verifyAccountAbsent(
        a.rightProof.proofRelatedNodes,
        a.rightLeafIndex,
        a.leftProof.proofRelatedNodes,
        a.leftLeafIndex,
        root,
        ABSENT,
      ),
    ).toBe(false);
    expect(
      await verifier.verifyAccountAbsent(
        a.leftProof.proofRelatedNodes.map((n, i) => (i === 41 ? flip(n, 70) : n)),
        a.leftLeafIndex,
        ...(args.slice(2) as [string[], number]),
        root,
        ABSENT,
      ),
    ).toBe(false);

    const cleared = present.storageProofs[0] as Non;
    expect('leftLeafIndex' in cleared).toBe(true);
    const storageRoot = await verifier.storageRootOf((present.accountProof as Inc).proof.value);
    const sArgs = [
      cleared.leftProof.proofRelatedNodes,
      cleared.leftLeafIndex,
      cleared.rightProof.proofRelatedNodes,
      cleared.rightLeafIndex,
    ] as const;
    expect(await verifier.verifyStorageAbsent(...sArgs, storageRoot, slot(2))).toBe(true);
    expect(await verifier.verifyStorageAbsent(...sArgs, storageRoot, slot(1))).toBe(false);
    // At block 0 the slot was still there: the block-1 neighbours do not verify against the block-0 root.
    const root0 = (await world.rootAt(0n))!;
    const old = await world.getProof(A, [slot(2)], 0n);
    expect('leafIndex' in old.storageProofs[0]!).toBe(true);
    expect(verifyStateProof(root0, old).ok).toBe(true);
    expect(
      await verifier.verifyAccount(
        (old.accountProof as Inc).proof.proofRelatedNodes,
        (old.accountProof as Inc).leafIndex,
        root,
        A,
        (old.accountProof as Inc).proof.value,
      ),
    ).toBe(false);
  });
});
