import { ethers } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Anvil } from '../../src/devnet/anvil.js';
import { countingUpstream, deployOuter, post, wallet, type CountingUpstream, type RpcReply } from '../rpc/helpers.js';
import { waitFor } from '../helpers/chain.js';
import { chain, nodeCanary, openTestDb, sendTransfer, startRpcUnderTest, type RpcUnderTest } from './rpc-harness.js';
import { floodWindow, UNDER_ATTACK } from './canary.js';

/**
 * Issue 35, item 5: eth_getLogs without an address over 118 blocks of 500 logs made anvil build 134 MB,
 * then the reply's budget answered -32005, for 1 unit; at 5-10 calls/s anvil went to 4-5 GB and stopped
 * mining. Now a range wider than RPC_LOGS_CHUNK_BLOCKS goes to the node in chunks under what is left of the
 * reply's budget (src/rpc/log-range.ts), a client has at most RPC_LOGS_WIDE_MAX_PER_CLIENT of them in flight,
 * and the bytes the node returned are charged. Real anvil behind a counting proxy that records the size of
 * every answer the node wrote; real sockets; the rate limit on.
 */
let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let proxy: CountingUpstream;
let db: Awaited<ReturnType<typeof openTestDb>>;
let outer: ethers.Contract;
let first = 0;
let last = 0;
const stops: (() => Promise<unknown>)[] = [];
/** The receipt once anvil mined the transaction (a bounded poll). */
const receiptOf = (hash: string) =>
  waitFor(`receipt of ${hash}`, async () => (await provider.getTransactionReceipt(hash)) ?? undefined, 20_000, 20);

const BLOCKS = 20;
const PER_BLOCK = 250;
const BUDGET = 1_048_576;
const hex = (n: number) => `0x${n.toString(16)}`;

async function rpc(env: Record<string, string> = {}): Promise<RpcUnderTest> {
  const r = await startRpcUnderTest({
    db,
    schema: db.schema('rpc'),
    anvil: { ...anvil, url: proxy.url },
    env: {
      RPC_TRUSTED_PROXY_HOPS: '1',
      RPC_RATE_LIMIT_PER_SECOND: '50',
      RPC_MAX_RESPONSE_BYTES: String(BUDGET),
      RPC_LOGS_CHUNK_BLOCKS: '2',
      RPC_CACHE_BYTES: '0',
      ...env,
    },
  });
  stops.push(r.stop);
  return r;
}

const body = (method: string, params: unknown[], id = 1) => JSON.stringify({ jsonrpc: '2.0', id, method, params });
const send = async (url: string, method: string, params: unknown[], from: string) => {
  const r = await post(url, body(method, params), { 'x-forwarded-for': from });
  return { status: r.status, text: r.text, reply: JSON.parse(r.text) as RpcReply };
};
/** The result member of a reply exactly as written (the whole text between `"result":` and the closing brace). */
const resultText = (text: string) => text.slice(text.indexOf('"result":') + 9, text.lastIndexOf('}'));
const nodeAnswers = () => proxy.answers.get('eth_getLogs') ?? [];

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  proxy = await countingUpstream(anvil.url);
  db = await openTestDb();
  outer = await deployOuter(wallet(0, provider));
  // BLOCKS blocks of PER_BLOCK logs each (~140 KB of eth_getLogs answer per block).
  for (let i = 0; i < BLOCKS; i++) {
    const tx = (await outer.getFunction('note')(
      BigInt(i),
      ethers.id('flood'),
      BigInt(PER_BLOCK),
    )) as ethers.TransactionResponse;
    const receipt = await receiptOf(tx.hash);
    if (i === 0) first = receipt!.blockNumber;
    last = receipt!.blockNumber;
  }
}, 60_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await proxy?.close();
  await anvil?.stop();
  await db?.close();
});

describe('adversarial: wide eth_getLogs', () => {
  it('behavior: a range that fits is answered in chunks with the bytes anvil answers for the whole range (order and removed included)', async () => {
    const r = await rpc();
    const address = await outer.getAddress();
    const queries = [
      { fromBlock: hex(first), toBlock: hex(first + 2) },
      { fromBlock: hex(first + 3), toBlock: hex(first + 6), address, topics: [null, ethers.toBeHex(4, 32)] },
      { fromBlock: hex(last - 4), toBlock: 'latest', address: [address, wallet(5).address] },
      {
        fromBlock: 'earliest',
        toBlock: hex(first + 1),
        topics: [[ethers.id('nothing'), ethers.id('Noted(uint256,bytes32,uint256)')]],
      },
    ];
    for (const q of queries) {
      const before = nodeAnswers().length;
      const ours = await send(r.url, 'eth_getLogs', [q], '10.8.1.1');
      const direct = await post(anvil.url, body('eth_getLogs', [q]));
      expect(ours.reply.error, JSON.stringify(q)).toBeUndefined();
      expect(resultText(ours.text)).toBe(resultText(direct.text));
      expect(nodeAnswers().length - before, JSON.stringify(q)).toBeGreaterThan(1);
    }
    const all = (await send(r.url, 'eth_getLogs', [queries[0]], '10.8.1.1')).reply.result as {
      removed: boolean;
      logIndex: string;
    }[];
    expect(all).toHaveLength(3 * PER_BLOCK);
    expect(all.every((l) => l.removed === false)).toBe(true);
    // The eth_getFilterLogs of the same criteria takes the same path.
    const id = (await send(r.url, 'eth_newFilter', [queries[1]], '10.8.1.1')).reply.result as string;
    const filterLogs = await send(r.url, 'eth_getFilterLogs', [id], '10.8.1.1');
    expect(resultText(filterLogs.text)).toBe(
      resultText((await post(anvil.url, body('eth_getLogs', [queries[1]]))).text),
    );
  });

  it('error: a range past the budget is -32005 naming RPC_MAX_RESPONSE_BYTES, the node built at most the budget plus one chunk, and the bytes are charged', async () => {
    const r = await rpc({ RPC_RATE_LIMIT_PER_SECOND: '1', RPC_RATE_LIMIT_BURST: '10' });
    const whole = (await post(anvil.url, body('eth_getLogs', [{ fromBlock: 'earliest', toBlock: 'latest' }]))).text
      .length;
    const before = nodeAnswers().length;
    const refused = await send(r.url, 'eth_getLogs', [{ fromBlock: 'earliest', toBlock: 'latest' }], '10.8.2.1');
    expect(refused.reply.error).toMatchObject({ code: -32005, data: { cap: 'RPC_MAX_RESPONSE_BYTES', limit: BUDGET } });
    expect(refused.reply.error!.message).toMatch(/^response too large: .*\(RPC_MAX_RESPONSE_BYTES = 1048576\)/);
    const built = nodeAnswers().slice(before);
    const total = built.reduce((a, b) => a + b, 0);
    process.stdout.write(
      `wide eth_getLogs over the budget: the node built ${total} B in ${built.length} chunks (largest ${Math.max(...built)} B); the whole range is ${whole} B\n`,
    );
    expect(total).toBeLessThanOrEqual(BUDGET + Math.max(...built));
    expect(total).toBeLessThan(whole);
    // ~1 MiB returned by the node at 32 KiB per unit: far more than the 9 units left of the burst.
    const next = await send(r.url, 'eth_blockNumber', [], '10.8.2.1');
    expect(next.status).toBe(429);
    expect((await send(r.url, 'eth_blockNumber', [], '10.8.2.2')).status).toBe(200);
  });

  it('error: past RPC_MAX_LOGS_RESULTS the chunks stop: -32005 naming it, the node asked for no more than the chunk that passed it', async () => {
    const r = await rpc({ RPC_MAX_LOGS_RESULTS: '600', RPC_RATE_LIMIT_PER_SECOND: '0' });
    const before = nodeAnswers().length;
    const refused = await send(r.url, 'eth_getLogs', [{ fromBlock: hex(first), toBlock: hex(last) }], '10.8.5.1');
    expect(refused.reply.error).toMatchObject({ code: -32005, data: { cap: 'RPC_MAX_LOGS_RESULTS', limit: 600 } });
    // 2 blocks (500 logs), then 4 (1,000 more): past 600 after the second chunk, the 14 blocks after it never asked.
    expect(nodeAnswers().length - before).toBe(2);
    expect(refused.reply.error!.message).toMatchInlineSnapshot(
      `"query returned more than 600 results (RPC_MAX_LOGS_RESULTS: 600); got 1500. Narrow the range and retry."`,
    );
  });

  it('behavior: a client sending several wide queries at once gets every answer, RPC_LOGS_WIDE_MAX_PER_CLIENT at a time', async () => {
    const r = await rpc({ RPC_LOGS_WIDE_MAX_PER_CLIENT: '2', RPC_RATE_LIMIT_PER_SECOND: '0' });
    // Topics that match nothing: cheap for the node, and still wide. One batch: every call starts at once.
    const q = { fromBlock: hex(first), toBlock: hex(last), topics: [ethers.id('nothing')] };
    const batch = JSON.stringify(
      Array.from({ length: 5 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_getLogs', params: [q] })),
    );
    const replies = JSON.parse((await post(r.url, batch, { 'x-forwarded-for': '10.8.3.1' })).text) as RpcReply[];
    expect(replies.map((x) => x.result)).toEqual([[], [], [], [], []]);
  });

  it("error: a wide query that waits past RPC_EVM_TIMEOUT_MS for one of its client's RPC_LOGS_WIDE_MAX_PER_CLIENT slots is -32005 naming it, and never reaches the node", async () => {
    const r = await rpc({
      RPC_LOGS_WIDE_MAX_PER_CLIENT: '2',
      RPC_EVM_TIMEOUT_MS: '300',
      RPC_UPSTREAM_TIMEOUT_MS: '2000',
      RPC_RATE_LIMIT_PER_SECOND: '0',
    });
    const q = { fromBlock: hex(first), toBlock: hex(last), topics: [ethers.id('nothing')] };
    const batch = JSON.stringify(
      Array.from({ length: 5 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_getLogs', params: [q] })),
    );
    // A node that never answers logs: the client's two queries hold its two slots for 2 s, the others wait 300 ms.
    proxy.hold.add('eth_getLogs');
    const before = proxy.counts.get('eth_getLogs') ?? 0;
    const replies = JSON.parse((await post(r.url, batch, { 'x-forwarded-for': '10.8.3.2' })).text) as RpcReply[];
    proxy.hold.delete('eth_getLogs');
    expect((proxy.counts.get('eth_getLogs') ?? 0) - before).toBe(2);
    const refused = replies.filter(
      (x) => (x.error?.data as { cap?: string } | undefined)?.cap === 'RPC_LOGS_WIDE_MAX_PER_CLIENT',
    );
    expect(refused).toHaveLength(3);
    for (const x of refused) expect(x.error).toMatchObject({ code: -32005, data: { limit: 2 } });
    expect(refused[0]!.error!.message).toMatchInlineSnapshot(
      `"too many eth_getLogs over 2 blocks (RPC_LOGS_CHUNK_BLOCKS) in flight: this client already has 2 (RPC_LOGS_WIDE_MAX_PER_CLIENT = 2), and none finished within 300 ms (RPC_EVM_TIMEOUT_MS); wait for an answer before sending the next."`,
    );
    expect(await (await fetch(`${r.url}/metrics`)).text()).toContain(
      'l2stack_rpc_node_quota_refusals_total{variable="RPC_LOGS_WIDE_MAX_PER_CLIENT"} 3',
    );
  });

  it('behavior: one client asking wide eth_getLogs in a tight loop is refused at the budget and throttled; a canary from another address is served and the chain keeps mining', async () => {
    const r = await rpc({ RPC_MAX_RESPONSE_BYTES: String(BUDGET), RPC_RATE_LIMIT_PER_SECOND: '50' });
    const canary = nodeCanary('wide getLogs', r.url, { headers: { 'x-forwarded-for': '10.8.4.2' } });
    const startBlock = await provider.getBlockNumber();
    const outcomes = new Map<string, number>();
    const note = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
    const before = nodeAnswers().length;
    const attack = floodWindow(canary);
    const started = Date.now();
    const lanes = Array.from({ length: 8 }, async () => {
      while (attack.open()) {
        const { status, reply } = await send(
          r.url,
          'eth_getLogs',
          [{ fromBlock: 'earliest', toBlock: 'latest' }],
          '10.8.4.1',
        );
        const cap = (reply.error?.data as { cap?: string } | undefined)?.cap;
        note(status === 429 ? '429' : reply.error ? `${reply.error.code} ${cap}` : 'ok');
      }
    });
    // A transaction sent through the endpoint mid-attack is mined.
    const receipt = await attack.hold(sendTransfer(r.url, provider, '10.8.4.3').then(receiptOf));
    await Promise.all(lanes);
    const seconds = (Date.now() - started) / 1000;
    const report = await canary.stop();
    const built = nodeAnswers()
      .slice(before)
      .reduce((a, b) => a + b, 0);
    process.stdout.write(
      `wide getLogs flood: ${JSON.stringify(Object.fromEntries(outcomes))}; the node built ${(built / 1048576).toFixed(1)} MiB in ${seconds.toFixed(1)} s\n`,
    );

    expect(report.failures).toEqual([]);
    expect(report.sent).toBeGreaterThanOrEqual(UNDER_ATTACK);
    expect(receipt?.status).toBe(1);
    expect(await provider.getBlockNumber()).toBeGreaterThan(startBlock);
    for (const k of outcomes.keys())
      expect(k).toMatch(/^(429|-32005 RPC_MAX_RESPONSE_BYTES|-32005 RPC_LOGS_WIDE_MAX_PER_CLIENT)$/);
    expect(outcomes.get('429') ?? 0).toBeGreaterThan(0);
    expect(r.logs.filter((l) => l.msg === 'upstream is not answering')).toEqual([]);
  }, 60_000);
});
