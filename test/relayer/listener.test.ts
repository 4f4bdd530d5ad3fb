import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Wallet, parseEther, type JsonRpcProvider } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { createLogger } from '../../src/common/log.js';
import { createMetrics } from '../../src/common/metrics.js';
import { Shutdown } from '../../src/common/shutdown.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { migrate } from '../../src/common/db/migrations.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { L1MessageService__factory, type L1MessageService } from '../../generated/contracts/types/index.js';
import { loadRelayerConfig } from '../../src/relayer/config.js';
import { connectChain, type Chain } from '../../src/relayer/chain.js';
import { relayerMigrations } from '../../src/relayer/db/migrations.js';
import { RelayerRepository } from '../../src/relayer/db/repository.js';
import { createRelayerMetrics } from '../../src/relayer/metrics.js';
import { createSigner } from '../../src/relayer/signer.js';
import { ClaimSender } from '../../src/relayer/sender.js';
import type { DirectionContext } from '../../src/relayer/pipeline/context.js';
import { createListener, listenerCursor } from '../../src/relayer/pipeline/listener.js';
import { FIRST_BATCH } from '../../src/relayer/pipeline/sweep.js';

/**
 * The MessageSent listener on a backlog (src/relayer/pipeline/listener.ts): a window with many messages is stored
 * in chunks, the first one small, each with the resume point before the next message still to store, so a
 * restart between two chunks neither skips a message nor stores one twice, even when a chunk ends inside a block.
 */
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let anvil: Anvil;
let provider: JsonRpcProvider;
let l1: L1MessageService;
let repo: RelayerRepository;
let ctx: DirectionContext;
const chains: Chain[] = [];
const rpc = <T = unknown>(method: string, params: unknown[] = []) => provider.send(method, params) as Promise<T>;

beforeAll(async () => {
  testDb = await openTestDb();
  anvil = await startAnvil({ port: 0, chainId: 44_000 + (process.pid % 1_000) });
  provider = createProvider(anvil.url, anvil.chainId, { pollingInterval: 50 });
  const [owner] = devAccounts(1).map((a) => new Wallet(a.privateKey, provider));
  l1 = L1MessageService__factory.connect(await (await new L1MessageService__factory(owner).deploy(owner!.address, 3_600, parseEther('1'))).getAddress(), owner);
  const schema = testDb.schema('relayer_listener');
  await testDb.client.query('test.listener', (knex) => migrate(knex, schema, relayerMigrations));
  repo = new RelayerRepository(testDb.client, schema);
  const logger = createLogger({ level: 'info', destination: new Writable({ write: (_c, _e, cb) => cb() }) });
  const registry = createMetrics({ defaultMetrics: false });
  const config = loadRelayerConfig({
    L1_L2_AUTO_CLAIM_ENABLED: 'true', L2_L1_AUTO_CLAIM_ENABLED: 'false', DB_CLEANER_ENABLED: 'false',
    L1_CONTRACT_ADDRESS: await l1.getAddress(), L2_CONTRACT_ADDRESS: await l1.getAddress(), L1_RPC_URL: anvil.url, L2_RPC_URL: anvil.url,
    L1_SIGNER_TYPE: 'private-key', L2_SIGNER_TYPE: 'private-key', L2_SIGNER_PRIVATE_KEY: Wallet.createRandom().privateKey,
    L1_L2_EOA_ENABLED: 'true', L1_LISTENER_BLOCK_CONFIRMATION: '0', L1_LISTENER_INITIAL_FROM_BLOCK: String(await provider.getBlockNumber()),
  });
  const shutdown = new Shutdown(logger);
  const chain = (await connectChain({ name: 'L1', url: anvil.url, contract: config.l1.contractAddress, metrics: registry, logger }, shutdown.signal))!;
  chains.push(chain);
  const metrics = createRelayerMetrics(registry, repo);
  const sender = new ClaimSender(repo, chain, await createSigner(config.l2.signer!), { maxNonceDiff: 100, logger, metrics, direction: 'L1_TO_L2' });
  ctx = {
    direction: 'L1_TO_L2', config, dir: config.l1ToL2, origin: chain, originConfig: config.l1, destination: chain, destinationConfig: config.l2,
    repo, metrics, logger, sender, health: { lastProgressAt: undefined, lastBlock: undefined },
  };
});

afterAll(async () => {
  for (const c of chains) c.provider.destroy();
  provider?.destroy();
  await anvil?.stop();
  await testDb?.close();
});

/** Sends `n` messages in one block; returns their hashes and the block. */
async function sendInOneBlock(n: number, nonce: number): Promise<{ hashes: string[]; block: number }> {
  await rpc('evm_setAutomine', [false]);
  const txs = [];
  for (let i = 0; i < n; i++) txs.push(await l1.sendMessage(Wallet.createRandom().address, 1n, '0x', { value: 1n, nonce: nonce + i, gasLimit: 200_000n }));
  await rpc('evm_mine');
  await rpc('evm_setAutomine', [true]);
  const hashes: string[] = [];
  let block = 0;
  for (const tx of txs) {
    const receipt = (await tx.wait())!;
    block = receipt.blockNumber;
    hashes.push(String(l1.interface.parseLog(receipt.logs[0]!)!.args._messageHash).toLowerCase());
  }
  return { hashes, block };
}

const stored = () => testDb.client.query('test.listener', async (knex) => ((await knex(`${repo.schema}.message`).select('message_hash')) as { message_hash: string }[]).map((r) => r.message_hash));

describe('listener on a backlog', () => {
  it('behavior: the first chunk is stored alone, and a restart after it stores the rest exactly once (a chunk ending inside a block)', async () => {
    const owner = await l1.runner!.provider!.getTransactionCount(devAccounts(1)[0]!.address);
    const { hashes: first, block } = await sendInOneBlock(FIRST_BATCH + 8, owner); // the first chunk ends inside this block
    const { hashes: more } = await sendInOneBlock(100, owner + FIRST_BATCH + 8);

    expect(await createListener(ctx)()).toBe(true); // more to store at once
    expect((await stored()).sort()).toEqual(first.slice(0, FIRST_BATCH).sort());
    expect(await repo.getCursor(listenerCursor(ctx))).toBe(block - 1); // that block is read again after a restart

    const restarted = createListener(ctx);
    while (await restarted());
    expect((await stored()).sort()).toEqual([...first, ...more].sort());
    expect(await repo.getCursor(listenerCursor(ctx))).toBe(await provider.getBlockNumber());
  });
});
