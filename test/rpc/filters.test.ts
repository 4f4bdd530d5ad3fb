import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { call, chain, deployOuter, result, startTestRpc, wallet } from './helpers.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { mined } from '../../src/common/chain/mined.js';

let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let db: Awaited<ReturnType<typeof openTestDb>>;
let schema: string;
let a: Awaited<ReturnType<typeof startTestRpc>>;
let b: Awaited<ReturnType<typeof startTestRpc>>;
let capped: Awaited<ReturnType<typeof startTestRpc>>;
let outer: ethers.Contract;
let address: string;

type Log = { transactionHash: string; logIndex: string; blockNumber: string; topics: string[] };
const key = (l: Log) => `${l.transactionHash}:${l.logIndex}`;

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  outer = await deployOuter(wallet(0, provider));
  address = await outer.getAddress();
  db = await openTestDb();
  schema = db.schema('rpc');
  // Two replicas on one database (the upstream alone would not share filters between them).
  a = await startTestRpc({ db: db.client, schema, upstreams: [anvil.url] });
  b = await startTestRpc({ db: db.client, schema, upstreams: [anvil.url] });
  capped = await startTestRpc({
    db: db.client,
    schema,
    upstreams: [anvil.url],
    env: { RPC_MAX_LOGS_BLOCK_RANGE: '3', RPC_MAX_LOGS_RESULTS: '5' },
  });
});

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await capped?.stop();
  await anvil?.stop();
  await db?.close();
});

/** Emits `count` Noted logs with tag `tag` in one transaction. */
async function emit(n: bigint, count: bigint, tag = 'x'): Promise<ethers.TransactionReceipt> {
  const tx = (await outer.getFunction('note')(n, ethers.id(tag), count)) as ethers.TransactionResponse;
  return (await mined(tx))!;
}

describe('filters in the database', () => {
  it('behavior: a log filter reports each new log once, on whichever replica is polled', async () => {
    const from = `0x${((await provider.getBlockNumber()) + 1).toString(16)}`;
    const id = await result(a.url, 'eth_newFilter', [{ address, fromBlock: from }]);
    expect(await result(b.url, 'eth_getFilterChanges', [id])).toEqual([]);
    await emit(1n, 2n);
    const first = (await result(b.url, 'eth_getFilterChanges', [id])) as Log[];
    expect(first).toHaveLength(2);
    expect(await result(a.url, 'eth_getFilterChanges', [id])).toEqual([]);
    await emit(2n, 1n);
    const second = (await result(a.url, 'eth_getFilterChanges', [id])) as Log[];
    expect(second).toHaveLength(1);
    expect(BigInt(second[0]!.topics[1]!)).toBe(2n);
    const all = (await result(b.url, 'eth_getFilterLogs', [id])) as Log[];
    expect(all.map(key)).toEqual([...first, ...second].map(key));
  });

  it('behavior: polls alternating between replicas lose and double nothing', async () => {
    const id = await result(a.url, 'eth_newFilter', [
      { address, topics: [outer.interface.getEvent('Noted')!.topicHash] },
    ]);
    const seen: Log[] = [];
    const start = await provider.getBlockNumber();
    for (let i = 0; i < 12; i++) {
      await emit(BigInt(100 + i), BigInt((i % 3) + 1));
      seen.push(...((await result(i % 2 === 0 ? a.url : b.url, 'eth_getFilterChanges', [id])) as Log[]));
      if (i % 4 === 0) await emit(BigInt(200 + i), 1n); // logs that land between polls
    }
    seen.push(...((await result(a.url, 'eth_getFilterChanges', [id])) as Log[]));
    const truth = (await result(anvil.url, 'eth_getLogs', [
      { fromBlock: `0x${(start + 1).toString(16)}`, toBlock: 'latest', address },
    ])) as Log[];
    expect(seen.map(key)).toEqual(truth.map(key));
  });

  it('behavior: racing polls on two replicas return each log exactly once', async () => {
    const id = await result(a.url, 'eth_newFilter', [{ address }]);
    const start = await provider.getBlockNumber();
    const seen: Log[] = [];
    for (let round = 0; round < 4; round++) {
      await emit(BigInt(300 + round), 3n);
      const polls = await Promise.all(
        Array.from({ length: 8 }, (_, i) => result(i % 2 === 0 ? a.url : b.url, 'eth_getFilterChanges', [id])),
      );
      for (const p of polls) seen.push(...(p as Log[]));
    }
    const truth = (await result(anvil.url, 'eth_getLogs', [
      { fromBlock: `0x${(start + 1).toString(16)}`, toBlock: 'latest', address },
    ])) as Log[];
    expect(seen.map(key).sort()).toEqual(truth.map(key).sort());
    expect(new Set(seen.map(key)).size).toBe(seen.length);
  });

  it('behavior: polls of one filter at once on one replica run one after the other: one compare-and-set per new block, the rest answer [] from memory', async () => {
    const id = await result(a.url, 'eth_newFilter', [{ address }]);
    expect(await result(a.url, 'eth_getFilterChanges', [id])).toEqual([]); // now the replica knows the filter's cursor
    const start = await provider.getBlockNumber();
    await emit(900n, 3n);
    const seen: Log[] = [];
    const updatesPerRound: number[] = [];
    // The replica may not have seen the new head at the first round (docs/rpc-speed.md, Head tracker): rounds until it
    // has.
    for (let round = 0; round < 50 && seen.length < 3; round++) {
      let updates = 0;
      const count = (q: { sql: string }) => {
        if (/^update/i.test(q.sql)) updates++;
      };
      db.client.knex.on('query', count);
      try {
        const polls = await Promise.all(Array.from({ length: 6 }, () => result(a.url, 'eth_getFilterChanges', [id])));
        for (const p of polls) seen.push(...(p as Log[]));
      } finally {
        db.client.knex.off('query', count);
      }
      updatesPerRound.push(updates);
    }
    const truth = (await result(anvil.url, 'eth_getLogs', [
      { fromBlock: `0x${(start + 1).toString(16)}`, toBlock: 'latest', address },
    ])) as Log[];
    expect(seen.map(key)).toEqual(truth.map(key));
    // Racing polls would each fetch the logs and try the compare-and-set (losers too): one update per round at most.
    expect(Math.max(...updatesPerRound)).toBe(1);
  });

  it('behavior: a block filter reports new block hashes once', async () => {
    const id = await result(b.url, 'eth_newBlockFilter', []);
    await result(anvil.url, 'anvil_mine', ['0x3']);
    // The endpoint knows the head through its head tracker, which may not have seen the last mined block
    // yet (docs/rpc-speed.md "Head tracker"): the rest comes with a later poll, so poll until three hashes came.
    const hashes: string[] = [];
    for (const deadline = Date.now() + 15_000; hashes.length < 3 && Date.now() < deadline;) {
      hashes.push(...((await result(a.url, 'eth_getFilterChanges', [id])) as string[]));
      if (hashes.length < 3) await new Promise((r) => setTimeout(r, 100));
    }
    const head = await provider.getBlockNumber();
    const expected = await Promise.all([head - 2, head - 1, head].map(async (n) => (await provider.getBlock(n))!.hash));
    expect(hashes).toEqual(expected);
    expect(await result(b.url, 'eth_getFilterChanges', [id])).toEqual([]);
    const logs = await call(a.url, 'eth_getFilterLogs', [id]);
    expect(logs.error).toMatchObject({ code: -32000 });
  });

  it('behavior: a log filter far behind catches up in capped steps without losing or doubling logs', async () => {
    const id = await result(capped.url, 'eth_newFilter', [{ address }]);
    const start = await provider.getBlockNumber();
    for (let i = 0; i < 7; i++) await emit(BigInt(400 + i), 2n);
    const seen: Log[] = [];
    for (let i = 0; i < 10; i++) seen.push(...((await result(capped.url, 'eth_getFilterChanges', [id])) as Log[]));
    const truth = (await result(anvil.url, 'eth_getLogs', [
      { fromBlock: `0x${(start + 1).toString(16)}`, toBlock: 'latest', address },
    ])) as Log[];
    expect(seen.map(key)).toEqual(truth.map(key));
  });

  it('behavior: an empty poll of a filter this replica knows reads no database row; an uninstall on the other replica is seen at once', async () => {
    const id = await result(a.url, 'eth_newFilter', [{ address }]);
    expect(await result(a.url, 'eth_getFilterChanges', [id])).toEqual([]); // reads the row once
    let queries = 0;
    const count = () => queries++;
    db.client.knex.on('query', count);
    try {
      for (let i = 0; i < 5; i++) expect(await result(a.url, 'eth_getFilterChanges', [id])).toEqual([]);
    } finally {
      db.client.knex.off('query', count);
    }
    expect(queries).toBe(0);
    // New logs still arrive through the compare-and-set, and the remembered filter forgets an uninstall.
    await emit(600n, 2n);
    expect(await result(a.url, 'eth_getFilterChanges', [id])).toHaveLength(2);
    expect(await result(b.url, 'eth_uninstallFilter', [id])).toBe(true);
    expect((await call(a.url, 'eth_getFilterChanges', [id])).error!.message).toMatch(/^filter not found/);
  });

  it('error: unknown, uninstalled and expired filters are "filter not found", never []', async () => {
    const unknown = await call(a.url, 'eth_getFilterChanges', ['0x1234']);
    expect(unknown.error).toMatchObject({ code: -32000 });
    expect(unknown.error!.message).toMatch(/^filter not found/);
    expect(await result(a.url, 'eth_uninstallFilter', ['0x1234'])).toBe(false);

    const id = await result(a.url, 'eth_newFilter', [{}]);
    expect(await result(b.url, 'eth_uninstallFilter', [id])).toBe(true);
    expect(await result(b.url, 'eth_uninstallFilter', [id])).toBe(false);
    expect((await call(a.url, 'eth_getFilterChanges', [id])).error!.message).toMatch(/^filter not found/);

    const old = await result(a.url, 'eth_newFilter', [{}]);
    // Not polled for longer than RPC_FILTER_TTL_SECONDS (300 s): moved back in time rather than waited for.
    await db.client
      .knex(`${schema}.filters`)
      .where({ id: old })
      .update({ last_poll_at: db.client.knex.raw(`now() - interval '301 seconds'`) });
    expect((await call(b.url, 'eth_getFilterChanges', [old])).error!.message).toMatch(/^filter not found/);
    expect((await call(b.url, 'eth_getFilterLogs', [old])).error!.message).toMatch(/^filter not found/);
    expect(await result(a.url, 'eth_uninstallFilter', [old])).toBe(false);
  });
});

describe('eth_getLogs rules', () => {
  it('behavior: blockHash wins over fromBlock/toBlock', async () => {
    const r = await emit(500n, 2n);
    const logs = (await result(a.url, 'eth_getLogs', [
      { blockHash: r.blockHash, fromBlock: '0x0', toBlock: '0x0', address },
    ])) as Log[];
    expect(logs.map((l) => l.transactionHash)).toEqual([r.hash, r.hash]);
  });

  it('behavior: address lists and topic positions with null and OR-lists', async () => {
    const r1 = await emit(601n, 1n, 'one');
    const r2 = await emit(602n, 1n, 'two');
    await emit(603n, 1n, 'three');
    const range = { fromBlock: `0x${r1.blockNumber.toString(16)}`, toBlock: 'latest' };
    const topic = (n: bigint) => ethers.zeroPadValue(ethers.toBeHex(n), 32);
    const or = (await result(a.url, 'eth_getLogs', [
      { ...range, address: [address, wallet(5).address], topics: [null, [topic(601n), topic(602n)]] },
    ])) as Log[];
    expect(or.map((l) => l.transactionHash)).toEqual([r1.hash, r2.hash]);
    const byTag = (await result(a.url, 'eth_getLogs', [{ ...range, topics: [null, null, ethers.id('two')] }])) as Log[];
    expect(byTag.map((l) => l.transactionHash)).toEqual([r2.hash]);
    expect(await result(a.url, 'eth_getLogs', [{ ...range, address: [wallet(5).address] }])).toEqual([]);
  });

  it('error: a range over RPC_MAX_LOGS_BLOCK_RANGE is -32005 naming the cap, without an upstream query', async () => {
    const head = await provider.getBlockNumber();
    const r = await call(capped.url, 'eth_getLogs', [{ fromBlock: `0x${(head - 5).toString(16)}`, toBlock: 'latest' }]);
    expect(r.error!.code).toBe(-32005);
    expect(r.error!.message).toContain('RPC_MAX_LOGS_BLOCK_RANGE');
    expect(r.error!.message).toContain('at most 3 blocks');
    const early = await call(capped.url, 'eth_getLogs', [{ fromBlock: 'earliest' }]);
    expect(early.error!.code).toBe(-32005);
  });

  it('error: more than RPC_MAX_LOGS_RESULTS logs is -32005 naming the cap', async () => {
    const r = await emit(700n, 6n);
    const res = await call(capped.url, 'eth_getLogs', [{ blockHash: r.blockHash }]);
    expect(res.error!.code).toBe(-32005);
    expect(res.error!.message).toContain('RPC_MAX_LOGS_RESULTS');
    expect(res.error!.message).toContain('more than 5 results');
  });

  it('behavior: fromBlock and toBlock default to latest', async () => {
    const r = await emit(800n, 1n);
    const logs = (await result(a.url, 'eth_getLogs', [{ address }])) as Log[];
    expect(logs.map((l) => l.transactionHash)).toEqual([r.hash]);
  });
});
