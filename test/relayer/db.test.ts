import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Wallet } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { newMessage } from './new-message.js';
import { migrate } from '../../src/common/db/migrations.js';
import { relayerMigrations } from '../../src/relayer/db/migrations.js';
import { RelayerRepository, type NewMessage } from '../../src/relayer/db/repository.js';
import { ClaimSender } from '../../src/relayer/claim/sender.js';
import { finalizationFor } from '../../src/relayer/pipeline/l2-to-l1.js';
import { createSigner } from '../../src/relayer/signer.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { connectChain } from '../../src/relayer/chain.js';
import { createLogger } from '../../src/common/log.js';
import { createMetrics } from '../../src/common/metrics.js';
import { loadRelayerConfig, startRelayer } from '../../src/relayer/index.js';
import { Shutdown } from '../../src/common/shutdown.js';
import { runL2stack } from '../helpers/l2stack.js';

let testDb: Awaited<ReturnType<typeof openTestDb>>;
let repo: RelayerRepository;
let anvil: Anvil;
const logger = createLogger({ level: 'silent' });
const KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'; // anvil dev account 1

const message = (i: number, over: Partial<NewMessage> = {}): NewMessage => newMessage(i, i, over);

beforeAll(async () => {
  testDb = await openTestDb();
  const schema = testDb.schema('relayer');
  await migrate(testDb.client.knex, schema, relayerMigrations);
  repo = new RelayerRepository(testDb.client, schema);
  anvil = await startAnvil({ port: 0, chainId: 31999 });
});
afterAll(async () => {
  await anvil?.stop();
  await testDb?.close();
});

describe('relayer database', () => {
  it('behavior: a window is stored once with its resume point; uint256 fees survive exactly', async () => {
    expect(await repo.storeMessages([message(1), message(2)], { name: 'c', lastBlock: 10 })).toBe(2);
    expect(await repo.storeMessages([message(2), message(3)], { name: 'c', lastBlock: 12 })).toBe(1);
    expect(await repo.getCursor('c')).toBe(12);
    const [row] = await repo.findByHash(message(1).message_hash);
    expect(row!.fee).toBe(message(1).fee);
    // The same hash in the other direction is another record.
    expect(await repo.storeMessages([message(1, { direction: 'L2_TO_L1' })], { name: 'c', lastBlock: 13 })).toBe(1);
    expect(await repo.findByHash(message(1).message_hash)).toHaveLength(2);
  });

  it('behavior: a log window of 5,000 messages is stored in one call (more bind parameters than PostgreSQL takes in one statement), each with its history line', async () => {
    const window = Array.from({ length: 5_000 }, (_, i) => message(100_000 + i));
    expect(await repo.storeMessages(window, { name: 'big', lastBlock: 1_000 })).toBe(5_000);
    expect(await repo.storeMessages(window, { name: 'big', lastBlock: 1_001 })).toBe(0);
    expect(await repo.getCursor('big')).toBe(1_001);
    const hashes = window.map((m) => m.message_hash);
    const stored = await testDb.client.knex
      .withSchema(testDb.schema('relayer'))
      .from('message')
      .whereIn('message_hash', hashes)
      .count<{ n: string }[]>({ n: '*' });
    expect(Number(stored[0]!.n)).toBe(5_000);
    const history = await testDb.client.knex
      .withSchema(testDb.schema('relayer'))
      .from('message_status_history as h')
      .join('message as m', 'm.id', 'h.message_id')
      .whereIn('m.message_hash', hashes)
      .count<{ n: string }[]>({ n: '*' });
    expect(Number(history[0]!.n)).toBe(5_000);
  });

  it('behavior: the finalizations covering a page of blocks come in one read, each once, and a block picks the first recorded of those covering it', async () => {
    const contract = '0x00000000000000000000000000000000000000f1';
    const fin = (tx: number, first: number, last: number, contract_address = contract) => ({
      contract_address,
      l1_tx_hash: `0x${tx.toString(16).padStart(64, '0')}`,
      l1_block_number: String(tx),
      first_l2_block: String(first),
      final_l2_block: String(last),
      tree_depth: 5,
      merkle_roots: [`0x${'ab'.repeat(32)}`],
      messaging_blocks: [first],
    });
    // A covers 10..20; B (recorded later, as after a reorg on L1) 15..30; C 40..50; D covers 45 on another contract.
    await repo.storeFinalizations([fin(1, 10, 20), fin(2, 15, 30)], { name: 'fins', lastBlock: 2 });
    await repo.storeFinalizations([fin(3, 40, 50), fin(4, 45, 45, '0x00000000000000000000000000000000000000f2')], {
      name: 'fins',
      lastBlock: 4,
    });
    const blocks = [12, 16, 16, 25, 35, 45, 9];
    const found = await repo.finalizationsCovering(contract, blocks);
    expect(found.map((f) => Number(f.l1_block_number))).toEqual([1, 2, 3]);
    expect(found[0]!.merkle_roots).toEqual([`0x${'ab'.repeat(32)}`]);
    expect(blocks.map((b) => finalizationFor(found, b)?.l1_block_number ?? null)).toEqual([
      '1',
      '1',
      '1',
      '2',
      null,
      '3',
      null,
    ]);
    expect(await repo.finalizationsCovering(contract, [])).toEqual([]);
    expect(await repo.finalizationsCovering(contract, [1_000])).toEqual([]);
  });

  it('behavior: a transition applies only from the expected status and is recorded once in the history', async () => {
    const [row] = await repo.findByHash(message(3).message_hash);
    expect(await repo.transition(row!.id, ['SENT'], 'TRANSACTION_SIZE_COMPUTED')).toBe(true);
    expect(await repo.transition(row!.id, ['SENT'], 'ANCHORED')).toBe(false);
    expect(await repo.transition(row!.id, ['TRANSACTION_SIZE_COMPUTED'], 'ANCHORED')).toBe(true);
    expect(await repo.transition(row!.id, ['ANCHORED'], 'FEE_UNDERPRICED', {}, 'too cheap')).toBe(true);
    expect(await repo.transition(row!.id, ['FEE_UNDERPRICED'], 'FEE_UNDERPRICED', {}, 'still too cheap')).toBe(true);
    const history = (await repo.history([row!.id])).get(row!.id)!;
    expect(history.map((h) => [h.from_status, h.status, h.reason])).toEqual([
      [null, 'SENT', null],
      ['SENT', 'TRANSACTION_SIZE_COMPUTED', null],
      ['TRANSACTION_SIZE_COMPUTED', 'ANCHORED', null],
      ['ANCHORED', 'FEE_UNDERPRICED', 'too cheap'],
    ]);
    // Every line names this relayer instance as the actor.
    expect(new Set(history.map((h) => h.actor))).toEqual(new Set([repo.actor]));
  });

  it('error: the database refuses an unknown status or direction', async () => {
    await expect(
      repo.storeMessages([message(9, { status: 'DONE' as 'SENT' })], { name: 'c', lastBlock: 14 }),
    ).rejects.toThrow(/message_status_check/);
    await expect(
      repo.storeMessages([message(9, { direction: 'L3' as 'L1_TO_L2' })], { name: 'c', lastBlock: 14 }),
    ).rejects.toThrow(/message_direction_check/);
  });

  it('behavior: concurrent claims lease distinct, gap-free nonces from the database', async () => {
    const rows = [];
    for (let i = 20; i < 30; i++) {
      await repo.storeMessages([message(i)], { name: 'n', lastBlock: i });
      const [r] = await repo.findByHash(message(i).message_hash, 'L1_TO_L2');
      await repo.transition(r!.id, ['SENT'], 'ANCHORED');
      rows.push((await repo.findByHash(message(i).message_hash, 'L1_TO_L2'))[0]!);
    }
    const chain = (await connectChain(
      {
        name: 'L2',
        url: anvil.url,
        contract: `0x${'3'.repeat(40)}`,
        metrics: createMetrics({ defaultMetrics: false }),
        logger,
      },
      new AbortController().signal,
    ))!;
    const signer = await createSigner({ type: 'private-key', privateKey: KEY });
    // Two senders on one database, like two relayer processes: the row lock keeps their nonces apart.
    const senders = [0, 1].map(
      () => new ClaimSender(repo, chain, signer, { maxNonceDiff: 100, logger, direction: 'L1_TO_L2' }),
    );
    const claim = {
      to: new Wallet(KEY).address,
      data: '0x',
      gasLimit: 21_000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1n,
      sponsored: false,
    };
    const sent = (
      await Promise.all(rows.map((r, i) => senders[i % 2]!.submitMany([{ message: r, from: ['ANCHORED'], claim }])))
    ).flat();
    expect(sent).toHaveLength(rows.length);
    expect(sent.map((s) => s.nonce).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const after = await Promise.all(rows.map(async (r) => (await repo.findByHash(r.message_hash, 'L1_TO_L2'))[0]!));
    expect(after.every((r) => r.status === 'PENDING' && r.retries === 1 && r.claim_tx_raw !== null)).toBe(true);
    chain.provider.destroy();
  });
});

describe('relayer process', () => {
  it('error: `l2stack relayer` with a bad environment lists every problem and exits 1 before connecting anywhere', () => {
    const r = runL2stack(['relayer'], {
      timeout: 30_000,
      env: {
        PATH: process.env.PATH,
        L1_L2_AUTO_CLAIM_ENABLED: 'true',
        L2_L1_AUTO_CLAIM_ENABLED: 'false',
        L1_SIGNER_TYPE: 'aws',
        DATABASE_HOST: '127.0.0.1',
        DATABASE_PORT: '1',
      },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('Invalid configuration (7 problems)');
    expect(r.stderr).toContain('L1_SIGNER_TYPE: expected one of private-key, remote-signer, kms, got "aws"');
    expect(r.stderr).toContain('DB_CLEANER_ENABLED: required: set it to a boolean (true or false)');
    expect(r.stdout).not.toContain('relayer started');
  });

  it('behavior: readiness is 503 with the failing checks while an RPC endpoint is down; liveness stays 200', async () => {
    const config = loadRelayerConfig({
      L1_L2_AUTO_CLAIM_ENABLED: 'true',
      L2_L1_AUTO_CLAIM_ENABLED: 'false',
      DB_CLEANER_ENABLED: 'false',
      L1_CONTRACT_ADDRESS: `0x${'3'.repeat(40)}`,
      L2_CONTRACT_ADDRESS: `0x${'5'.repeat(40)}`,
      L1_RPC_URL: anvil.url,
      L2_RPC_URL: 'http://127.0.0.1:1',
      L1_SIGNER_TYPE: 'private-key',
      L2_SIGNER_TYPE: 'private-key',
      L2_SIGNER_PRIVATE_KEY: KEY,
    });
    const shutdown = new Shutdown(logger);
    const relayer = await startRelayer({
      common: { logger, metrics: createMetrics({ defaultMetrics: false }), shutdown },
      db: testDb.client,
      config: { ...config, api: { ...config.api, port: 0 } },
      schema: testDb.schema('ready'),
      validateResponses: true,
    });
    try {
      expect((await fetch(`${relayer.url}/health/live`)).status).toBe(200);
      const res = await fetch(`${relayer.url}/health/ready`);
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await res.json()) as { status: string; checks: { name: string; ok: boolean; detail?: string }[] };
      expect(body.status).toBe('unavailable');
      expect(body.checks.map((c) => [c.name, c.ok])).toEqual([
        ['database', true],
        ['l1Rpc', true],
        ['l2Rpc', false],
        ['listener.L1_TO_L2', false],
      ]);
      expect(body.checks[2]!.detail).toMatch(/^eth_blockNumber failed: /);
      expect(body.checks[3]!.detail).toBe('listener not started (starting)');
    } finally {
      await relayer.stop();
    }
  });
});
