import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NonceManager, Wallet, type JsonRpcProvider } from 'ethers';
import { TestToken__factory } from '../../generated/contracts/types/index.js';
import { createLogger } from '../../src/common/log.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { mined } from '../../src/common/chain/mined.js';
import { createMetrics } from '../../src/common/metrics.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import type { TraceMethod } from '../../src/state/config.js';
import { Ingestor } from '../../src/state/ingest.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { parityBlockChanges, type ParityBlockReplay } from '../../src/state/parity-diff.js';
import { createJsonRpcCaller } from '../../src/state/rpc-client.js';
import { WorldState } from '../../src/state/state.js';

/**
 * The two ways the state manager reads a block's change (prestateTracer diffMode and the parity stateDiff
 * replay) must build the same tree: the same root after every block of a history that creates accounts and
 * contracts, writes and clears storage, destroys a contract in the transaction that created it, reverts,
 * calls a genesis contract the tree was not told of, and touches one account and one slot from several
 * transactions of one block.
 */
const [deployer, second] = devAccounts(2);
const logger = createLogger({ level: 'silent' });
const FRESH = '0x3333333333333333333333333333333333333333';
const BENEFICIARY = '0x000000000000000000000000000000000000dEaD';
const CREATE2_FACTORY = '0x4e59b44847b379578588920ca78fbf26c0b4956c';
let l2: Anvil;
let l2p: JsonRpcProvider;

async function history(): Promise<void> {
  const signer = new NonceManager(new Wallet(deployer!.privateKey, l2p));
  const other = new Wallet(second!.privateKey, l2p);
  await mined(signer.sendTransaction({ to: FRESH, value: 1_000n }));
  const token = await new TestToken__factory(signer).deploy('Trace', 'TR', 18, deployer!.address, 1_000n);
  await token.waitForDeployment();
  await mined(token.transfer(FRESH, 300n));
  // A contract with no code and one slot (init code: sstore(5, 1), stop), created with value.
  await mined(signer.sendTransaction({ data: '0x600160055500', value: 5n }));
  // A contract that destroys itself while it is created, sending its value on (init code: selfdestruct(0xdead)).
  await mined(signer.sendTransaction({ data: `0x73${BENEFICIARY.slice(2).toLowerCase()}ff`, value: 7n }));
  // Through anvil's CREATE2 factory: an account of the chain's genesis, with code, that the tree was not told of.
  await mined(signer.sendTransaction({ to: CREATE2_FACTORY, data: `0x${'00'.repeat(32)}600160055500` }));
  // A reverting transfer (more than the balance), with its gas given so nothing estimates it first.
  const reverting = await TestToken__factory.connect(await token.getAddress(), other).transfer(FRESH, 10n ** 30n, {
    gasLimit: 100_000,
  });
  expect((await l2p.getTransactionReceipt(reverting.hash))?.status).toBe(0); // automine: mined when sent

  // One block, several transactions: `second` gets tokens and hands them all back (its slot set then
  // cleared), the deployer's slot moves twice, FRESH is paid twice.
  await l2p.send('evm_setAutomine', [false]);
  const tokenOf = (w: NonceManager | Wallet) => TestToken__factory.connect(token.target as string, w);
  const sent = [
    await tokenOf(signer).transfer(second!.address, 50n, { gasLimit: 100_000 }),
    await tokenOf(other).transfer(deployer!.address, 50n, { gasLimit: 100_000, nonce: await other.getNonce() }),
    await signer.sendTransaction({ to: FRESH, value: 1n, gasLimit: 21_000 }),
    await signer.sendTransaction({ to: FRESH, value: 2n, gasLimit: 21_000 }),
  ];
  await l2p.send('evm_mine', []);
  await l2p.send('evm_setAutomine', [true]);
  const receipts = await Promise.all(sent.map((tx) => l2p.getTransactionReceipt(tx.hash)));
  expect(receipts.map((r) => r?.status)).toEqual([1, 1, 1, 1]);
  expect(new Set(receipts.map((r) => r!.blockNumber)).size).toBe(1);
}

/** Follows the chain to its head with `method` into a store of its own; the tree it built. */
async function follow(method: TraceMethod): Promise<WorldState> {
  const world = new WorldState(new MemoryStore());
  const ing = new Ingestor(world, createProvider(l2.url, 59_999), logger, createMetrics({ defaultMetrics: false }), {
    maxBlocksPerStep: 100,
    blocksPerTransaction: 10,
    genesisAccounts: [deployer!.address.toLowerCase(), second!.address.toLowerCase()],
    finalized: () => undefined,
    rpc: createJsonRpcCaller(l2.url),
    traceMethod: method,
  });
  const head = await l2p.getBlockNumber();
  for (let i = 0; i < 50 && ((await world.store.head())?.number ?? -1n) < BigInt(head); i++) await ing.step();
  expect((await world.store.head())?.number).toBe(BigInt(head));
  return world;
}

beforeAll(async () => {
  l2 = await startAnvil({ port: 0, chainId: 59_999 });
  l2p = createProvider(l2.url, 59_999);
  await history();
}, 120_000);

afterAll(async () => {
  l2p?.destroy();
  await l2?.stop();
});

describe('state diff sources', () => {
  it('behavior: prestateTracer diffs and parity replays build the same root after every block', async () => {
    const [byPrestate, byReplay] = [
      await follow('debug_traceBlockByHash'),
      await follow('trace_replayBlockTransactions'),
    ];
    const head = await l2p.getBlockNumber();
    expect(head).toBeGreaterThanOrEqual(8);
    for (let b = 0n; b <= BigInt(head); b++) {
      const root = await byPrestate.rootAt(b);
      expect(root, `block ${b}`).toMatch(/^0x[0-9a-f]{64}$/);
      expect(await byReplay.rootAt(b), `block ${b}`).toBe(root);
    }
  });

  it('behavior: a slot cleared and an account destroyed in the block are what the replay says', () => {
    const replay: ParityBlockReplay = [
      {
        stateDiff: {
          '0xAAAA000000000000000000000000000000000001': {
            balance: { '*': { from: '0x10', to: '0x5' } },
            nonce: { '*': { from: '0x0', to: '0x1' } },
            code: '=',
            storage: {},
          },
          '0x00000000000000000000000000000000000000c0': {
            balance: '=',
            nonce: '=',
            code: '=',
            storage: { '0x01': { '-': '0x07' }, '0x02': { '*': { from: '0x01', to: '0x02' } } },
          },
        },
      },
      {
        stateDiff: {
          '0x00000000000000000000000000000000000000c1': {
            balance: { '-': '0x0' },
            nonce: { '-': '0x1' },
            code: { '-': '0x60' },
            storage: { '0x01': { '*': { from: '0x01', to: '0x02' } } },
          },
        },
      },
    ];
    const [sender, contract, destroyed] = parityBlockChanges(replay);
    expect(sender).toMatchObject({
      address: '0xaaaa000000000000000000000000000000000001',
      deleted: false,
      balance: 5n,
      nonce: 1n,
      before: { balance: 16n, nonce: 0n },
    });
    expect(contract).toMatchObject({ address: '0x00000000000000000000000000000000000000c0', deleted: false });
    expect([contract!.balance, contract!.nonce, contract!.code]).toEqual([undefined, undefined, undefined]);
    const slot = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
    expect([...contract!.storage].map(([k, v]) => [k, Buffer.from(v).toString('hex')])).toEqual([
      [slot(1), '00'.repeat(32)],
      [slot(2), `${'00'.repeat(31)}02`],
    ]);
    expect(destroyed).toMatchObject({
      address: '0x00000000000000000000000000000000000000c1',
      deleted: true,
      clearStorage: true,
    });
    expect(destroyed!.storage.size).toBe(0);
  });

  it('error: a replay entry without a state diff, or a delta of another shape, is refused naming it', () => {
    expect(() => parityBlockChanges([{ transactionHash: '0x01' }] as ParityBlockReplay)).toThrow(
      'replay entry 0 has no stateDiff',
    );
    const bad = [
      { stateDiff: { '0x00000000000000000000000000000000000000c0': { balance: { '?': '0x1' } } } },
    ] as unknown as ParityBlockReplay;
    expect(() => parityBlockChanges(bad)).toThrow(/replay entry 0, account 0x0+c0 balance: not a state-diff delta/);
  });
});
