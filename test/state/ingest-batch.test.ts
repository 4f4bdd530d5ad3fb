import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { NonceManager, Wallet, type JsonRpcProvider } from 'ethers';
import { TestToken__factory, type TestToken } from '../../generated/contracts/types/index.js';
import { createLogger } from '../../src/common/log.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { migrate } from '../../src/common/db/migrations.js';
import { createMetrics } from '../../src/common/metrics.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import type { TraceMethod } from '../../src/state/config.js';
import { Ingestor } from '../../src/state/ingest.js';
import { createJsonRpcCaller } from '../../src/state/rpc-client.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { stateMigrations } from '../../src/state/migrations.js';
import { PgStore } from '../../src/state/pg-store.js';
import { WorldState } from '../../src/state/state.js';
import type { VersionedStore } from '../../src/state/store.js';
import { openTestDb } from '../helpers/db.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * Batched catch-up (several blocks per transaction) against a real anvil L2 and a real database: the
 * tables must end up row for row as one transaction per block leaves them, also across reorgs (anvil
 * snapshot/revert, then a longer different branch), including one that happens while a batch is being
 * fetched.
 */
const [deployer] = devAccounts(1);
const logger = createLogger({ level: 'silent' });
let l2: Anvil;
let l2p: JsonRpcProvider;
let signer: NonceManager;
let token: TestToken;
let db: Awaited<ReturnType<typeof openTestDb>>;
let proxy: Server;
let proxyUrl: string;
/**
 * Runs once, before the first request of `method` (default: the header) for that block is forwarded (the test's reorg).
 */
let onHeader: { block: number; method?: string; run: () => Promise<void> } | undefined;

const address = (salt: string, i: number) => `0x${(salt.repeat(40) + i.toString(16).padStart(8, '0')).slice(-40)}`;

/** `n` blocks of activity: new token holders (new storage slots), emptied holders (deleted slots), new accounts. */
async function activity(n: number, salt: string): Promise<void> {
  for (let i = 0; i < n; i++) {
    if (i % 3 === 0) await mined(token.transfer(address(salt, i), 10n + BigInt(i)));
    else if (i % 3 === 1) await mined(signer.sendTransaction({ to: address(salt, i), value: 1_000n + BigInt(i) }));
    else await mined(token.transfer(address(salt, i), 1n));
  }
}

async function pgStore(name: string): Promise<PgStore> {
  const schema = db.schema(name);
  await db.client.query('test.ingest_batch', (knex) => migrate(knex, schema, stateMigrations));
  return new PgStore(db.client, schema);
}

/**
 * Batched ingestors read headers and traces as the state manager does (its JSON-RPC client); per-block ones through
 * ethers, the reference.
 */
const ingestor = (store: VersionedStore, blocksPerTransaction: number, url = l2.url, traceMethod?: TraceMethod) =>
  new Ingestor(new WorldState(store), createProvider(url, 59_999), logger, createMetrics({ defaultMetrics: false }), {
    maxBlocksPerStep: 100,
    blocksPerTransaction,
    genesisAccounts: [deployer!.address.toLowerCase()],
    finalized: () => undefined,
    rpc: blocksPerTransaction > 1 ? createJsonRpcCaller(url) : undefined,
    traceMethod,
  });

/** Steps until the store's head is the chain's head block (same hash); returns the step errors seen. */
async function follow(ing: Ingestor, store: VersionedStore): Promise<unknown[]> {
  const errors: unknown[] = [];
  for (let i = 0; i < 200; i++) {
    const latest = await l2p.getBlock('latest');
    if ((await store.head())?.hash === latest!.hash) return errors;
    await ing.step().catch((err: unknown) => errors.push(err));
  }
  throw new Error(
    `did not catch up; ${errors.length} step errors, the first: ${errors.slice(0, 3).map(String).join('; ')}`,
  );
}

/** Every row of a store's tables, in key order. */
async function dump(store: PgStore) {
  const q = (sql: string) => db.client.knex.raw<{ rows: unknown[] }>(sql).then((r) => r.rows);
  const s = store.schema;
  return {
    blocks: await q(`select number, hash, parent_hash, root from ${s}.blocks order by number`),
    nodes: await q(
      `select encode(tree, 'hex') t, pos, block, encode(value, 'hex') v from ${s}.nodes order by tree, pos, block`,
    ),
    keys: await q(
      `select encode(tree, 'hex') t, encode(hkey, 'hex') h, block, leaf_index from ${s}.keys order by tree, hkey, block`,
    ),
  };
}

beforeAll(async () => {
  l2 = await startAnvil({ port: 0, chainId: 59_999 });
  l2p = createProvider(l2.url, 59_999);
  signer = new NonceManager(new Wallet(deployer!.privateKey, l2p));
  token = await new TestToken__factory(signer).deploy('Batch', 'BT', 18, deployer!.address, 10n ** 24n);
  await token.waitForDeployment();
  db = await openTestDb();
  // A JSON-RPC proxy in front of the L2, so the test can reorg the chain in the middle of a fetch.
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString();
        const call = JSON.parse(body) as { method: string; params: unknown[] };
        if (
          onHeader &&
          call.method === (onHeader.method ?? 'eth_getBlockByNumber') &&
          Number(call.params[0]) === onHeader.block
        ) {
          const hook = onHeader;
          onHeader = undefined;
          await hook.run();
        }
        const up = await fetch(l2.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        res.writeHead(up.status, { 'content-type': 'application/json' }).end(await up.text());
      })().catch(() => res.destroy()); // the chain stopped at the end of the file
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
});

afterAll(async () => {
  proxy?.close();
  await db?.close();
  await l2?.stop();
});

describe('batched state ingest', () => {
  it('behavior: blocks written in batches leave the same rows as one transaction per block, across a reorg', async () => {
    await activity(6, 'a');
    const snapshot = (await l2p.send('evm_snapshot', [])) as string;
    await activity(10, 'b');
    const batched = await pgStore('batched');
    // 4 per transaction: batches end at odd places, the last one partial.
    const ing = ingestor(batched, 4);
    expect(await follow(ing, batched)).toEqual([]);
    const oldHead = (await batched.head())!;

    // A different, longer branch from the snapshot: the store must roll back and re-apply.
    await l2p.send('evm_revert', [snapshot]);
    signer.reset();
    await activity(13, 'c');
    expect(await follow(ing, batched)).toEqual([]);
    expect((await batched.block(oldHead.number))!.hash).not.toBe(oldHead.hash);

    const perBlock = await pgStore('per_block');
    expect(await follow(ingestor(perBlock, 1), perBlock)).toEqual([]);
    const [a, b] = [await dump(batched), await dump(perBlock)];
    expect(a.blocks.length).toBe(Number(await l2p.getBlockNumber()) + 1);
    expect(a).toEqual(b);

    // And the same roots as the in-memory store applying block by block.
    const memory = new MemoryStore();
    await follow(ingestor(memory, 1), memory);
    expect((await memory.head())!.root).toBe((await batched.head())!.root);
  });

  it.each([
    ['midbatch', 'eth_getBlockByNumber', undefined],
    // The parity replay is asked by number: the block is replaced between its header and its replay.
    ['midreplay', 'trace_replayBlockTransactions', 'trace_replayBlockTransactions'],
  ] as const)(
    'behavior: a reorg while a batch is being fetched is rolled back exactly (%s, the reorg before %s)',
    async (name, hookMethod, traceMethod) => {
      const store = await pgStore(name);
      const ing = ingestor(store, 3, proxyUrl, traceMethod);
      expect(await follow(ing, store)).toEqual([]);
      const base = await l2p.getBlockNumber();
      const snapshot = (await l2p.send('evm_snapshot', [])) as string;
      await activity(12, 'd');
      let fired = false;
      onHeader = {
        block: base + 8,
        method: hookMethod,
        run: async () => {
          await l2p.send('evm_revert', [snapshot]);
          signer.reset();
          await activity(14, 'e');
          fired = true;
        },
      };
      // Step errors are allowed here (a trace asked by the hash of a block the reorg removed is refused); the result
      // must be exact.
      const errors = await follow(ing, store);
      // Replays by number in flight at the reorg see the new branch's blocks under old headers: refused, not applied.
      // Under load the replay can also reach the node before the new branch has that block, and anvil refuses it
      // ("Resource not found", seen once in CI): refused as well. Either way a step failed at the reorg, and the
      // exact comparison below is what shows nothing of the old branch was kept.
      if (traceMethod)
        expect(errors.map(String).join('\n')).toMatch(
          /L2 block \d+ was replaced while it was replayed|Resource not found/,
        );
      // The ingestor may have caught up with the new branch while it was still growing: follow it to its end.
      for (let i = 0; i < 600 && !fired; i++) await new Promise((r) => setTimeout(r, 50));
      expect(fired).toBe(true);
      await follow(ing, store);

      const perBlock = await pgStore(`${name}_per_block`);
      expect(await follow(ingestor(perBlock, 1), perBlock)).toEqual([]);
      expect(await dump(store)).toEqual(await dump(perBlock));
    },
  );
});
