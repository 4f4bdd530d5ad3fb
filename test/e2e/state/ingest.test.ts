import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbiCoder, NonceManager, Wallet, keccak256, type JsonRpcProvider } from 'ethers';
import {
  L1MessageService__factory,
  Poseidon2SparseMerkleProofVerifier__factory,
  SparseMerkleProofVerifier__factory,
  SparseMerkleTreeVerifierBase__factory,
  TestToken__factory,
  type L1MessageService,
  type SparseMerkleTreeVerifierBase,
  type TestToken,
} from '../../../generated/contracts/types/index.js';
import { createCommon, type Common } from '../../../src/common/kernel.js';
import { createProvider } from '../../../src/common/chain/provider.js';
import { RpcError } from '../../../src/common/errors.js';
import { devAccounts } from '../../../src/devnet/accounts.js';
import { startAnvil, type Anvil } from '../../../src/devnet/anvil.js';
import { decodeAccountValue } from '../../../src/state/encoding.js';
import { fromHex, toHex, word } from '../../../src/state/bytes.js';
import { startStateManager, type RunningStateManager, type StateConfig } from '../../../src/state/index.js';
import type { ProofEntryJson } from '../../../src/state/state.js';
import { DEFAULT_STATE_HASH, type StateHash } from '../../../src/state/config.js';
import { hashProviderOf } from '../../../src/state/state-hash.js';
import { verifyStateProof as verifyIn, type StateProofResultJson } from '../../../src/state/verify.js';
import { openTestDb } from '../../helpers/db.js';
import { mined } from '../../../src/common/chain/mined.js';
import { waitFor } from '../../helpers/chain.js';

/**
 * The state manager against real chains: an L2 anvil where a token contract writes (and clears) storage,
 * an L1 anvil with the message service the test finalizes on (as the devnet coordinator does, with our
 * root), proofs verified in TypeScript and by the Solidity verifier against the root stored on L1.
 */
type Inc = Extract<ProofEntryJson, { leafIndex: number }>;
type Non = Extract<ProofEntryJson, { leftLeafIndex: number }>;
const [deployer, holder, untouched] = devAccounts(3);
const SINK = '0x000000000000000000000000000000000000dead';
const FRESH = '0x1111111111111111111111111111111111111111';
const ABSENT = '0x2222222222222222222222222222222222222222';
/** The tree's format (STATE_HASH, as the state manager would read it), and the L1 verifier of that format. */
const STATE_HASH = (process.env.STATE_HASH ?? DEFAULT_STATE_HASH) as StateHash;
const verifyStateProof = (root: string, p: StateProofResultJson) => verifyIn(root, p, hashProviderOf(STATE_HASH));

/** TestToken keeps balances in mapping slot 1: keccak256(abi.encode(holder, 1)). */
const balanceSlot = (addr: string) => keccak256(AbiCoder.defaultAbiCoder().encode(['address', 'uint256'], [addr, 1]));

let l1: Anvil;
let l2: Anvil;
let l1p: JsonRpcProvider;
let l2p: JsonRpcProvider;
let l2signer: NonceManager;
let service: L1MessageService;
let verifier: SparseMerkleTreeVerifierBase;
let token: TestToken;
let db: Awaited<ReturnType<typeof openTestDb>>;
let common: Common;
let config: StateConfig;
let sm: RunningStateManager;

const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 30_000) =>
  waitFor(what, fn, timeoutMs, 50);

const reorgs = async () =>
  (await common.metrics.getSingleMetric('l2stack_state_reorgs_total')!.get()).values[0]?.value ?? 0;

const caughtUp = async () =>
  until('ingest to reach the L2 head', async () =>
    sm.latestBlock() >= BigInt(await l2p.getBlockNumber()) ? true : undefined,
  );

async function finalize(block: bigint): Promise<string> {
  const root = (await sm.rootAt(block))!;
  await mined(service.finalizeBlocks(block, root, [], 0, []));
  await until(`block ${block} to be seen as finalized`, () => (sm.latestFinalized() === block ? true : undefined));
  return root;
}

beforeAll(async () => {
  [l1, l2] = await Promise.all([startAnvil({ port: 0, chainId: 31_337 }), startAnvil({ port: 0, chainId: 59_999 })]);
  l1p = createProvider(l1.url, 31_337);
  l2p = createProvider(l2.url, 59_999);
  const l1signer = new NonceManager(new Wallet(deployer!.privateKey, l1p));
  service = await new L1MessageService__factory(l1signer).deploy(await l1signer.getAddress(), 86_400, 10n ** 30n);
  const deployed = await (
    STATE_HASH === 'poseidon2'
      ? new Poseidon2SparseMerkleProofVerifier__factory(l1signer)
      : new SparseMerkleProofVerifier__factory(l1signer)
  ).deploy();
  await Promise.all([service.waitForDeployment(), deployed.waitForDeployment()]);
  verifier = SparseMerkleTreeVerifierBase__factory.connect(await deployed.getAddress(), l1signer);

  l2signer = new NonceManager(new Wallet(deployer!.privateKey, l2p));
  token = await new TestToken__factory(l2signer).deploy('State', 'ST', 18, deployer!.address, 1_000n);
  await token.waitForDeployment();
  await mined(token.transfer(holder!.address, 400n));
  // The deployer sends everything else away: its balance slot goes back to zero (a deleted leaf).
  await mined(token.transfer(SINK, 600n));
  await mined(l2signer.sendTransaction({ to: FRESH, value: 12_345n }));

  db = await openTestDb();
  common = createCommon({ level: 'silent' });
  config = {
    l2RpcUrl: l2.url,
    l1RpcUrl: l1.url,
    l1MessageService: await service.getAddress(),
    retainedFinalizedBlocks: 3,
    pollIntervalMs: 50,
    l1FromBlock: 0,
    l1LogRange: 1_000,
    maxBlocksPerStep: 100,
    blocksPerTransaction: 100,
    traceMethod: 'trace_replayBlockTransactions',
    hash: STATE_HASH,
    genesisAccounts: [untouched!.address.toLowerCase()],
    schema: db.schema('state'),
  };
  sm = await startStateManager({ common, db: db.client, config });
});

afterAll(async () => {
  await common?.shutdown.run('test done');
  await db?.close();
  await Promise.all([l1?.stop(), l2?.stop()]);
});

describe('state manager on real chains', () => {
  it('behavior: proves present and absent accounts and slots at a finalized block, verified in TypeScript and on L1', async () => {
    await caughtUp();
    const n = BigInt(await l2p.getBlockNumber());
    const root = await finalize(n);
    expect(await service.stateRootHashes(n)).toBe(root);

    const tokenAddr = (await token.getAddress()).toLowerCase();
    const randomSlot = toHex(word(0xdeadbeefn));
    const p = await sm.proofBackend.getProof(
      tokenAddr,
      [balanceSlot(holder!.address), balanceSlot(deployer!.address), randomSlot, toHex(word(0))],
      n,
    );
    const v = verifyStateProof(root, p);
    expect(v).toMatchObject({ ok: true });
    expect('leafIndex' in p.accountProof).toBe(true);
    expect(p.storageProofs.map((e) => 'leafIndex' in e)).toEqual([true, false, false, true]);
    expect(BigInt((p.storageProofs[0] as Inc).proof.value)).toBe(400n);
    expect(BigInt((p.storageProofs[3] as Inc).proof.value)).toBe(1_000n); // totalSupply

    // The account value matches what the chain reports at that block.
    for (const addr of [deployer!.address, FRESH, untouched!.address]) {
      const e = (await sm.proofBackend.getProof(addr, [], n)).accountProof as Inc;
      expect('leafIndex' in e, addr).toBe(true);
      const acct = decodeAccountValue(fromHex(e.proof.value));
      expect(acct.balance).toBe(await l2p.getBalance(addr, Number(n)));
      expect(acct.nonce).toBe(BigInt(await l2p.getTransactionCount(addr, Number(n))));
      expect(
        await verifier.verifyAccountAtFinalizedBlock(
          await service.getAddress(),
          n,
          e.proof.proofRelatedNodes,
          e.leafIndex,
          addr,
          e.proof.value,
        ),
      ).toBe(true);
    }
    const codeHash = decodeAccountValue(fromHex((p.accountProof as Inc).proof.value)).keccakCodeHash;
    expect(toHex(codeHash)).toBe(keccak256(await l2p.getCode(tokenAddr, Number(n))));

    // On L1: the token account against the stored root, its storage against its storageRoot.
    const acct = p.accountProof as Inc;
    expect(
      await verifier.verifyAccountAtFinalizedBlock(
        await service.getAddress(),
        n,
        acct.proof.proofRelatedNodes,
        acct.leafIndex,
        tokenAddr,
        acct.proof.value,
      ),
    ).toBe(true);
    const storageRoot = await verifier.storageRootOf(acct.proof.value);
    const present = p.storageProofs[0] as Inc;
    expect(
      await verifier.verifyStorage(
        present.proof.proofRelatedNodes,
        present.leafIndex,
        storageRoot,
        balanceSlot(holder!.address),
        present.proof.value,
      ),
    ).toBe(true);
    const cleared = p.storageProofs[1] as Non;
    expect(
      await verifier.verifyStorageAbsent(
        cleared.leftProof.proofRelatedNodes,
        cleared.leftLeafIndex,
        cleared.rightProof.proofRelatedNodes,
        cleared.rightLeafIndex,
        storageRoot,
        balanceSlot(deployer!.address),
      ),
    ).toBe(true);

    const missing = (await sm.proofBackend.getProof(ABSENT, [randomSlot], 'finalized')).accountProof as Non;
    expect('leftLeafIndex' in missing).toBe(true);
    expect(
      await verifier.verifyAccountAbsentAtFinalizedBlock(
        await service.getAddress(),
        n,
        missing.leftProof.proofRelatedNodes,
        missing.leftLeafIndex,
        missing.rightProof.proofRelatedNodes,
        missing.rightLeafIndex,
        ABSENT,
      ),
    ).toBe(true);
    expect(
      await verifier.verifyAccountAbsentAtFinalizedBlock(
        await service.getAddress(),
        n,
        missing.leftProof.proofRelatedNodes,
        missing.leftLeafIndex,
        missing.rightProof.proofRelatedNodes,
        missing.rightLeafIndex,
        tokenAddr,
      ),
    ).toBe(false);
  });

  it('error: a block that is not finalized on L1 is refused, naming the latest finalized block', async () => {
    const finalized = sm.latestFinalized()!;
    await mined(l2signer.sendTransaction({ to: FRESH, value: 1n }));
    await caughtUp();
    const err = await sm.proofBackend.getProof(FRESH, [], finalized + 1n).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).code).toBe(-32000);
    expect((err as RpcError).message).toBe(
      `block ${finalized + 1n} is not finalized on L1; the latest finalized block is ${finalized}`,
    );
    expect((err as RpcError).data).toEqual({
      requestedBlock: `0x${(finalized + 1n).toString(16)}`,
      latestFinalizedBlock: `0x${finalized.toString(16)}`,
    });
  });

  it('behavior: a reorg above the finalized block is rolled back and re-applied from the new chain', async () => {
    const snapshot = (await l2p.send('evm_snapshot', [])) as string;
    await mined(l2signer.sendTransaction({ to: FRESH, value: 1_000n }));
    await caughtUp();
    const before = sm.latestBlock();
    await l2p.send('evm_revert', [snapshot]);
    l2signer.reset();
    // A different block at the same height, then one more so the new chain is longer.
    await mined(l2signer.sendTransaction({ to: ABSENT, value: 7n }));
    await mined(l2signer.sendTransaction({ to: ABSENT, value: 8n }));
    const head = BigInt(await l2p.getBlockNumber());
    expect(head).toBe(before + 1n);
    await until('the reorged chain to be applied', async () =>
      (await sm.rootAt(head)) !== undefined && sm.latestBlock() === head ? true : undefined,
    );
    expect(await reorgs()).toBe(1);
    const root = await finalize(head);
    const p = await sm.proofBackend.getProof(ABSENT, [], head);
    expect(verifyStateProof(root, p).ok).toBe(true);
    expect(decodeAccountValue(fromHex((p.accountProof as Inc).proof.value)).balance).toBe(15n);
    const fresh = (await sm.proofBackend.getProof(FRESH, [], head)).accountProof as Inc;
    expect(decodeAccountValue(fromHex(fresh.proof.value)).balance).toBe(await l2p.getBalance(FRESH, Number(head)));
  });

  it('error: a finalized block older than the retained window is refused with -32001', async () => {
    const err = await sm.proofBackend.getProof(FRESH, [], 1n).catch((e: unknown) => e);
    expect((err as RpcError).code).toBe(-32001);
    expect((err as RpcError).message).toMatch(/^state for block 1 is not retained; the oldest retained block is \d+/);
  });

  it('behavior: a restarted state manager resumes from the database and keeps following the chain', async () => {
    const head = sm.latestBlock();
    const root = (await sm.rootAt(head))!;
    await sm.stop();
    await mined(l2signer.sendTransaction({ to: FRESH, value: 2n }));
    common = createCommon({ level: 'silent' });
    sm = await startStateManager({ common, db: db.client, config });
    expect(sm.latestBlock()).toBe(head);
    expect(await sm.rootAt(head)).toBe(root);
    await caughtUp();
    const n = sm.latestBlock();
    expect(n).toBe(head + 1n);
    const newRoot = await finalize(n);
    const p = await sm.proofBackend.getProof(FRESH, [], 'finalized');
    expect(verifyStateProof(newRoot, p).ok).toBe(true);
    expect(decodeAccountValue(fromHex((p.accountProof as Inc).proof.value)).balance).toBe(
      await l2p.getBalance(FRESH, Number(n)),
    );
  });
});
