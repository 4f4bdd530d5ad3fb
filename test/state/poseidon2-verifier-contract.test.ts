import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Wallet } from 'ethers';
import {
  Poseidon2SparseMerkleProofVerifier__factory,
  type Poseidon2SparseMerkleProofVerifier,
} from '../../generated/contracts/types/index.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { fromHex, toHex } from '../../src/state/bytes.js';
import { poseidon2 } from '../../src/state/poseidon2.js';
import { alteredProofs, lineaAccountKeys, lineaJson, lineaProofs, lineaRoots } from './linea-vectors.js';

const KEY0 = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';

let anvil: Anvil;
let verifier: Poseidon2SparseMerkleProofVerifier;

beforeAll(async () => {
  anvil = await startAnvil({ port: 0, chainId: 31337 });
  const signer = new Wallet(KEY0, createProvider(anvil.url, 31337));
  verifier = await new Poseidon2SparseMerkleProofVerifier__factory(signer).deploy();
  await verifier.waitForDeployment();
});
afterAll(async () => {
  await anvil?.stop();
});

describe("Poseidon2SparseMerkleProofVerifier (Solidity) on Linea's published vectors", () => {
  it("behavior: the contract's Poseidon2 and key hash match every published vector and the TypeScript hash", async () => {
    const hashes = lineaJson<{ in: string; out: string }[]>('poseidon2-test-data.json');
    for (const v of hashes) expect(await verifier.poseidon2(v.in), v.in).toBe(v.out);
    const keys = lineaAccountKeys();
    for (const v of keys) expect(await verifier.accountHKey(v.input), v.input).toBe(v.output);
    // Limbs at and above p (all-ones input), which the contract reduces before the permutation.
    const high = `0x${'ff'.repeat(64)}`;
    expect(await verifier.poseidon2(high)).toBe(toHex(poseidon2(fromHex(high))));
    console.log(
      `on anvil: ${hashes.length}/${hashes.length} Poseidon2 vectors, ${keys.length}/${keys.length} account-key vectors match`,
    );
  });

  it('behavior: accepts the published account and storage proofs against their roots', async () => {
    const roots = lineaRoots();
    const { accountProof: a, storageProofs } = lineaProofs();
    const s = storageProofs[0]!;
    expect(await verifier.verifyProof(a.proof.proofRelatedNodes, a.leafIndex, roots.STATE_ROOT)).toBe(true);
    expect(
      await verifier.verifyAccount(a.proof.proofRelatedNodes, a.leafIndex, roots.STATE_ROOT, a.key, a.proof.value),
    ).toBe(true);
    expect(await verifier.storageRootOf(a.proof.value)).toBe(roots.STORAGE_ROOT);
    expect(
      await verifier.verifyStorage(s.proof.proofRelatedNodes, s.leafIndex, roots.STORAGE_ROOT, s.key, s.proof.value),
    ).toBe(true);
    const gas = await verifier.verifyAccount.estimateGas(
      a.proof.proofRelatedNodes,
      a.leafIndex,
      roots.STATE_ROOT,
      a.key,
      a.proof.value,
    );
    console.log(`on anvil: 2/2 published proofs accepted; verifyAccount costs ${gas} gas`);
  });

  it('error: rejects the published proofs with any node altered, or a wrong key, value, index or root', async () => {
    const roots = lineaRoots();
    const { accountProof: a, storageProofs } = lineaProofs();
    const s = storageProofs[0]!;
    // The last altered byte of each node and of the value (every byte of short entries is covered in TypeScript).
    const pick = <T extends { what: string }>(xs: T[]): T[] => [
      ...new Map(xs.map((x) => [x.what.replace(/ byte \d+$/, ''), x])).values(),
    ];
    let rejected = 0;
    for (const x of pick(alteredProofs(a))) {
      expect(
        await verifier.verifyAccount(
          x.proof.proof.proofRelatedNodes,
          a.leafIndex,
          roots.STATE_ROOT,
          a.key,
          x.proof.proof.value,
        ),
        x.what,
      ).toBe(false);
      rejected++;
    }
    for (const x of pick(alteredProofs(s))) {
      expect(
        await verifier.verifyStorage(
          x.proof.proof.proofRelatedNodes,
          s.leafIndex,
          roots.STORAGE_ROOT,
          s.key,
          x.proof.proof.value,
        ),
        x.what,
      ).toBe(false);
      rejected++;
    }
    expect(
      await verifier.verifyAccount(a.proof.proofRelatedNodes, a.leafIndex + 1, roots.STATE_ROOT, a.key, a.proof.value),
    ).toBe(false);
    expect(
      await verifier.verifyAccount(
        a.proof.proofRelatedNodes,
        a.leafIndex,
        roots.STATE_ROOT,
        `0x${'2e'.padEnd(40, '0')}`,
        a.proof.value,
      ),
    ).toBe(false);
    expect(
      await verifier.verifyStorage(s.proof.proofRelatedNodes, s.leafIndex, roots.STATE_ROOT, s.key, s.proof.value),
    ).toBe(false);
    console.log(`on anvil: ${rejected} altered published proofs rejected (plus wrong index, key and root)`);
    expect(rejected).toBe(2 * (42 + 1));
  });
});
