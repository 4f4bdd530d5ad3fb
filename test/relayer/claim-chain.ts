import { afterAll, beforeAll } from 'vitest';
import { Writable } from 'node:stream';
import { Wallet, parseEther, type JsonRpcProvider } from 'ethers';
import { createLogger } from '../../src/common/log.js';
import { createMetrics } from '../../src/common/metrics.js';
import { Shutdown } from '../../src/common/shutdown.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { messageHash } from '../../src/common/chain/messages.js';
import { nextRollingHash } from '../helpers/messages.js';
import type { DbClient } from '../../src/common/db/client.js';
import { openTestDb } from '../helpers/db.js';
import { migrate } from '../../src/common/db/migrations.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { L2MessageService__factory, type L2MessageService } from '../../generated/contracts/types/index.js';
import { loadRelayerConfig, type RelayerConfig } from '../../src/relayer/config.js';
import { connectChain, type Chain } from '../../src/relayer/chain.js';
import { relayerMigrations } from '../../src/relayer/db/migrations.js';
import { RelayerRepository, type MessageRow } from '../../src/relayer/db/repository.js';
import { createRelayerMetrics } from '../../src/relayer/metrics.js';
import { createSigner } from '../../src/relayer/signer.js';
import { ClaimSender } from '../../src/relayer/claim/sender.js';
import { createClaimingProcessor } from '../../src/relayer/claim/claiming.js';
import { createReceiptPersister } from '../../src/relayer/pipeline/persister.js';
import type { DirectionContext } from '../../src/relayer/pipeline/context.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * One real anvil chain with the L2 message service, for driving the L1→L2 claiming and receipt steps
 * one iteration at a time: messages are anchored directly by the deployer (the message setter) and
 * stored as ANCHORED, so a test controls exactly when claims are sent, mined, bumped or cancelled.
 */
export interface ClaimChain {
  anvil: Anvil;
  provider: JsonRpcProvider;
  service: L2MessageService;
  relayerKey: string;
  relayerAddress: string;
  repo: RelayerRepository;
  /** Everything the pipeline logged (JSON lines). */
  logLines: string[];
  registry: ReturnType<typeof createMetrics>;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /**
   * Anchors `count` fee-paying messages on chain and stores them ANCHORED; returns their rows. With
   * `anchor: false` they are stored ANCHORED but anchored on chain only by anchorPending() (their claims revert
   * until then); no other messages may be added in between.
   */
  addMessages(count: number, fee?: bigint, options?: { anchor?: boolean }): Promise<MessageRow[]>;
  /** Anchors on chain the messages added with `anchor: false`. */
  anchorPending(): Promise<void>;
  /** A context and its claiming and receipt steps for the given variable overrides. */
  pipeline(
    overrides?: Record<string, string>,
  ): Promise<{
    ctx: DirectionContext;
    claim: () => Promise<boolean>;
    receipts: () => Promise<boolean>;
    config: RelayerConfig;
    chain: Chain;
  }>;
  row(id: string): Promise<MessageRow>;
  setStatus(id: string, status: string): Promise<void>;
  /** Sets columns of a message row directly. */
  db(id: string, patch: Record<string, unknown>): Promise<void>;
  setNextNonce(nonce: number): Promise<void>;
  history(id: string): Promise<{ status: string; reason: string | null }[]>;
  stop(): Promise<void>;
}

let chainIds = 41_000 + (process.pid % 1_000) * 10;

export async function startClaimChain(db: DbClient, schema: string): Promise<ClaimChain> {
  const anvil = await startAnvil({ port: 0, chainId: chainIds++ });
  const provider = createProvider(anvil.url, anvil.chainId, { pollingInterval: 50 });
  const deployer = new Wallet(devAccounts(1)[0]!.privateKey, provider);
  const service = await new L2MessageService__factory(deployer).deploy(deployer.address, 0n);
  await service.waitForDeployment();
  const address = (await service.getAddress()).toLowerCase();
  const rpc = <T>(method: string, params: unknown[] = []) => provider.send(method, params) as Promise<T>;
  await rpc('anvil_setBalance', [address, `0x${parseEther('1000').toString(16)}`]);
  // A dedicated relayer key, so its nonces are the relayer's alone.
  const relayer = Wallet.createRandom();
  await rpc('anvil_setBalance', [relayer.address, `0x${parseEther('100').toString(16)}`]);
  await db.query('test.claim_chain', (knex) => migrate(knex, schema, relayerMigrations));
  const repo = new RelayerRepository(db, schema);
  const registry = createMetrics({ defaultMetrics: false });
  const logLines: string[] = [];
  const logger = createLogger({
    level: 'info',
    destination: new Writable({ write: (chunk, _e, cb) => (logLines.push(String(chunk)), cb()) }),
  });
  const shutdown = new Shutdown(logger);
  let anchored = 0;
  let rolling = '0x' + '00'.repeat(32);
  const user = Wallet.createRandom().address.toLowerCase();
  const chains: Chain[] = [];
  let pending: (() => Promise<void>) | undefined;
  const anchorPending = async () => {
    const p = pending;
    pending = undefined;
    await p?.();
  };

  return {
    anvil,
    provider,
    service,
    relayerKey: relayer.privateKey,
    relayerAddress: relayer.address.toLowerCase(),
    repo,
    logLines,
    registry,
    rpc,
    async addMessages(count, fee = parseEther('0.01'), options = {}) {
      const messages = Array.from({ length: count }, (_, i) => {
        const nonce = BigInt(anchored + i + 1);
        const m = { from: deployer.address.toLowerCase(), to: user, fee, value: 0n, nonce, calldata: '0x' };
        return { ...m, hash: messageHash(m) };
      });
      const first = anchored + 1;
      for (const m of messages) rolling = nextRollingHash(rolling, m.hash);
      anchored += count;
      const [last, rollingNow] = [anchored, rolling];
      pending = async () =>
        void (await mined(
          service.anchorL1L2MessageHashes(
            messages.map((m) => m.hash),
            first,
            last,
            rollingNow,
          ),
        ));
      if (options.anchor !== false) await anchorPending();
      const block = await provider.getBlockNumber();
      await repo.storeMessages(
        messages.map((m, i) => ({
          message_hash: m.hash,
          direction: 'L1_TO_L2',
          message_sender: m.from,
          destination: m.to,
          fee: m.fee.toString(),
          value: '0',
          message_nonce: m.nonce.toString(),
          calldata: '0x',
          contract_address: address,
          sent_block_number: block,
          sent_tx_hash: m.hash,
          sent_log_index: i,
          status: 'SENT',
          failure_reason: null,
        })),
        { name: 'test', lastBlock: block },
      );
      const hashes = messages.map((m) => m.hash);
      await db.query('test.claim_chain', (knex) =>
        knex(`${schema}.message`)
          .whereIn('message_hash', hashes)
          .update({ status: 'ANCHORED', anchored_at: knex.fn.now() }),
      );
      return db.query('test.claim_chain', (knex) =>
        knex(`${schema}.message`).whereIn('message_hash', hashes).orderBy('message_nonce').select<MessageRow[]>('*'),
      );
    },
    anchorPending,
    async pipeline(overrides = {}) {
      const config = loadRelayerConfig({
        L1_L2_AUTO_CLAIM_ENABLED: 'true',
        L2_L1_AUTO_CLAIM_ENABLED: 'false',
        DB_CLEANER_ENABLED: 'false',
        L1_CONTRACT_ADDRESS: address,
        L2_CONTRACT_ADDRESS: address,
        L1_RPC_URL: anvil.url,
        L2_RPC_URL: anvil.url,
        L1_SIGNER_TYPE: 'private-key',
        L2_SIGNER_TYPE: 'private-key',
        L2_SIGNER_PRIVATE_KEY: relayer.privateKey,
        L1_L2_EOA_ENABLED: 'true',
        ...overrides,
      });
      const chain = (await connectChain(
        { name: 'L2', url: config.l2.rpcUrl, contract: address, metrics: registry, logger },
        shutdown.signal,
      ))!;
      chains.push(chain);
      // The primary key, then any extra keys of L2_SIGNER_PRIVATE_KEYS, as the relayer builds them.
      const signers = await Promise.all([config.l2.signer!, ...config.l2.extraSigners].map((sc) => createSigner(sc)));
      const metrics = createRelayerMetrics(registry, repo);
      const senders = signers.map(
        (signer, i) =>
          new ClaimSender(repo, chain, signer, {
            maxNonceDiff: config.claiming.maxNonceDiff,
            logger,
            metrics,
            direction: 'L1_TO_L2',
            primary: i === 0,
          }),
      );
      const ctx: DirectionContext = {
        direction: 'L1_TO_L2',
        config,
        dir: config.l1ToL2,
        origin: chain,
        originConfig: config.l1,
        destination: chain,
        destinationConfig: config.l2,
        repo,
        metrics,
        logger,
        sender: senders[0]!,
        senders,
        health: { lastProgressAt: undefined, lastBlock: undefined },
      };
      return { ctx, config, chain, claim: createClaimingProcessor(ctx), receipts: createReceiptPersister(ctx) };
    },
    async setStatus(id, status) {
      await db.query('test.claim_chain', (knex) => knex(`${schema}.message`).where({ id }).update({ status }));
    },
    async db(id, patch) {
      await db.query('test.claim_chain', (knex) => knex(`${schema}.message`).where({ id }).update(patch));
    },
    async setNextNonce(nonce) {
      await db.query('test.claim_chain', (knex) =>
        knex(`${schema}.signer_nonce`)
          .insert({ chain_id: String(anvil.chainId), address: relayer.address.toLowerCase(), next_nonce: nonce })
          .onConflict(['chain_id', 'address'])
          .merge(['next_nonce']),
      );
    },
    row: (id) => db.query('test.claim_chain', (knex) => knex(`${schema}.message`).where({ id }).first<MessageRow>('*')),
    history: (id) =>
      db.query('test.claim_chain', (knex) =>
        knex(`${schema}.message_status_history`).where({ message_id: id }).orderBy('id').select('status', 'reason'),
      ),
    async stop() {
      for (const c of chains) c.provider.destroy();
      provider.destroy();
      await anvil.stop();
    },
  };
}

/**
 * A claim chain for the whole test file: started before its first test on the file's own test database
 * (schema `relayer`), stopped after its last (automine restored first, in case a test failed with it off).
 */
export function useClaimChain(): { readonly chain: ClaimChain; readonly db: Awaited<ReturnType<typeof openTestDb>> } {
  let db: Awaited<ReturnType<typeof openTestDb>> | undefined;
  let chain: ClaimChain | undefined;
  beforeAll(async () => {
    db = await openTestDb();
    chain = await startClaimChain(db.client, db.schema('relayer'));
  });
  afterAll(async () => {
    await chain?.rpc('evm_setAutomine', [true]).catch(() => undefined);
    await chain?.stop();
    await db?.close();
  });
  return {
    get chain() {
      return chain!;
    },
    get db() {
      return db!;
    },
  };
}
