import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import { createPublicClient, webSocket, type Abi, type Log } from 'viem';
import WebSocket from 'ws';
import type { Anvil } from '../../src/devnet/anvil.js';
import { openTestDb } from '../helpers/db.js';
import { sendRawBurst, waitFor } from '../helpers/chain.js';
import { mined } from '../../src/common/chain/mined.js';
import { call, chain, deployOuter, outerArtifact, resultValidator, startTestRpc, wallet } from './helpers.js';

/**
 * JSON-RPC over WebSocket on the endpoint's port: real anvil, real sockets, the clients dapps use (viem's
 * webSocket transport, ethers' WebSocketProvider) and a raw `ws` client for reorgs, resume and limits.
 */
let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let wsUrl: string;
let outer: ethers.Contract;
const NOTED = ethers.id('Noted(uint256,bytes32,uint256)');

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  testDb = await openTestDb();
  rpc = await startTestRpc({
    db: testDb.client,
    schema: testDb.schema('rpc'),
    upstreams: [anvil.url],
    env: { RPC_WS_MAX_SUBSCRIPTIONS: '5' },
  });
  wsUrl = rpc.url.replace('http://', 'ws://');
  outer = await deployOuter(wallet(0, provider));
}, 120_000);
afterAll(async () => {
  await rpc?.stop();
  await testDb?.close();
  await anvil?.stop();
});

/** A raw client: calls by id, notifications by subscription id, in arrival order. */
async function rawClient(url = wsUrl) {
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  let id = 1;
  const waiting = new Map<number, (v: { result?: unknown; error?: { code: number; message: string } }) => void>();
  const notes = new Map<string, Record<string, unknown>[]>();
  ws.on('message', (data) => {
    const msg = JSON.parse(data.toString()) as {
      id?: number;
      method?: string;
      params?: { subscription: string; result: Record<string, unknown> };
    };
    if (msg.method === 'eth_subscription') {
      const list = notes.get(msg.params!.subscription) ?? [];
      list.push(msg.params!.result);
      notes.set(msg.params!.subscription, list);
    } else waiting.get(msg.id!)?.(msg as never);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  return {
    ws,
    closed,
    notes: (sub: string) => notes.get(sub) ?? [],
    call(method: string, params: unknown[] = []) {
      const n = id++;
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: n, method, params }));
      return new Promise<{ result?: unknown; error?: { code: number; message: string } }>((resolve) =>
        waiting.set(n, resolve),
      );
    },
  };
}

async function note(n: number, count = 1, from = 0): Promise<ethers.TransactionReceipt> {
  const tx = (await (outer.connect(wallet(from, provider)) as ethers.Contract).getFunction('note')(
    n,
    ethers.ZeroHash,
    count,
  )) as ethers.TransactionResponse;
  return mined(tx);
}

describe('JSON-RPC over WebSocket', () => {
  it('behavior: viem watchBlocks/watchContractEvent and ethers WebSocketProvider get every head and every log of a 500-transaction burst, in order, none twice', async () => {
    const viem = createPublicClient({ transport: webSocket(wsUrl) });
    const viemBlocks: bigint[] = [];
    const viemLogs: Log[] = [];
    const viemErrors: string[] = [];
    const stopBlocks = viem.watchBlocks({
      // viem fetches each announced block and, when that fetch fails, reports no block at all (its `.catch(() => {})`):
      // that is recorded with the errors, so a missing head says why.
      onBlock: (b: { number: bigint | null } | undefined) =>
        void (b
          ? viemBlocks.push(b.number!)
          : viemErrors.push(`${new Date().toISOString()} a head whose block viem could not fetch`)),
      onError: (e) => void viemErrors.push(`${new Date().toISOString()} ${e.message.split('\n')[0]}`),
    });
    const stopLogs = viem.watchContractEvent({
      address: (await outer.getAddress()) as `0x${string}`,
      abi: outerArtifact().abi as Abi,
      eventName: 'Noted',
      onLogs: (logs: Log[]) => void viemLogs.push(...logs),
    });
    const ethersWs = new ethers.WebSocketProvider(wsUrl, 1337, { staticNetwork: true });
    const ethersBlocks: number[] = [];
    const ethersLogs: ethers.Log[] = [];
    await ethersWs.on('block', (n: number) => void ethersBlocks.push(n));
    await ethersWs.on(
      { address: await outer.getAddress(), topics: [NOTED] },
      (log: ethers.Log) => void ethersLogs.push(log),
    );
    // Both clients have subscribed once the endpoint holds their four subscriptions (heads and logs each).
    const metric = async (name: string) => (await rpc.common.metrics.getSingleMetric(name)!.get()).values;
    const live = async () => (await metric('l2stack_rpc_ws_subscriptions')).reduce((n, v) => n + v.value, 0);
    await waitFor(
      "the endpoint to hold both clients' subscriptions",
      async () => ((await live()) >= 4 ? true : undefined),
      30_000,
    );

    const start = await provider.getBlockNumber();
    const signer = wallet(1, provider);
    const first = await provider.getTransactionCount(signer.address);
    const to = await outer.getAddress();
    const fees = await provider.getFeeData();
    const { chainId } = await provider.getNetwork();
    // Signed here and sent as raw bytes, so a send anvil drops under load can be repeated (sendRawBurst).
    const raws = await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        signer.signTransaction({
          type: 2,
          chainId,
          nonce: first + i,
          to,
          gasLimit: 60_000,
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
          data: outer.interface.encodeFunctionData('note', [i, ethers.ZeroHash, 1]),
        }),
      ),
    );
    await sendRawBurst(provider, signer.address, first, raws);
    const end = await provider.getBlockNumber();

    await waitFor(
      'both clients to receive 500 logs',
      async () => (viemLogs.length >= 500 && ethersLogs.length >= 500 ? true : undefined),
      60_000,
    );
    await waitFor(
      'both clients to reach the last block',
      async () => (viemBlocks.includes(BigInt(end)) && ethersBlocks.includes(end) ? true : undefined),
      30_000,
    );
    const order = (logs: { blockNumber: number | bigint | null; index?: number; logIndex?: number | null }[]) =>
      logs.map((l) => `${l.blockNumber}:${l.logIndex ?? l.index}`);
    expect(viemLogs.length).toBe(500);
    expect(ethersLogs.length).toBe(500);
    expect(viemLogs.map((l) => BigInt((l as unknown as { args: { n: bigint } }).args.n))).toEqual(
      Array.from({ length: 500 }, (_, i) => BigInt(i)),
    );
    expect(new Set(order(ethersLogs)).size).toBe(500);
    expect(ethersLogs.map((l) => BigInt(l.topics[1]!))).toEqual(Array.from({ length: 500 }, (_, i) => BigInt(i)));
    const expected = Array.from({ length: end - start }, (_, i) => start + 1 + i);
    // viem fetches each announced block (eth_getBlockByNumber) and reports them as those calls return, so
    // its order is its own; every block once is what it gets from us. ethers reports the notifications as sent.
    // What each side saw, should a head be missing: viem's errors (a socket it saw closed drops the heads whose block
    // it was fetching) and the sockets the endpoint closed, by reason.
    const seen = `viem errors: ${JSON.stringify(viemErrors)}; closed by the endpoint: ${JSON.stringify((await metric('l2stack_rpc_ws_closed_total')).map((v) => [v.labels, v.value]))}`;
    expect(
      viemBlocks
        .filter((b) => b > BigInt(start))
        .map(Number)
        .sort((a, b) => a - b),
      seen,
    ).toEqual(expected);
    expect(ethersBlocks.filter((b) => b > start)).toEqual(expected);
    stopBlocks();
    stopLogs();
    // Closed, not left to reconnect (viem tries for ~10 s) to whichever server gets this port next.
    await (await viem.transport.getRpcClient()).close();
    await ethersWs.destroy();
  }, 240_000);

  it('behavior: a reorg reports the dropped logs again with removed: true, then the new chain', async () => {
    const c = await rawClient();
    const sub = (await c.call('eth_subscribe', ['logs', { address: await outer.getAddress() }])).result as string;
    const snapshot = (await provider.send('evm_snapshot', [])) as string;
    const dropped = await note(7001);
    await waitFor('the log before the reorg', async () => (c.notes(sub).length >= 1 ? true : undefined), 20_000);
    await provider.send('evm_revert', [snapshot]);
    await provider.send('anvil_mine', ['0x2']);
    const kept = await note(7002);
    await waitFor('the removal and the new log', async () => (c.notes(sub).length >= 3 ? true : undefined), 20_000);
    const seen = c.notes(sub).map((l) => ({ tx: l.transactionHash, removed: l.removed }));
    expect(seen).toEqual([
      { tx: dropped.hash, removed: false },
      { tx: dropped.hash, removed: true },
      { tx: kept.hash, removed: false },
    ]);
    c.ws.close();
  }, 120_000);

  it('behavior: a client that reconnects with resumeAfter its last log gets every log it missed exactly once, then live ones', async () => {
    const address = await outer.getAddress();
    const first = await rawClient();
    const sub1 = (await first.call('eth_subscribe', ['logs', { address, topics: [NOTED] }])).result as string;
    for (let i = 0; i < 3; i++) await note(8000 + i);
    await waitFor('three logs', async () => (first.notes(sub1).length >= 3 ? true : undefined), 20_000);
    const last = first.notes(sub1).at(-1)!;
    first.ws.terminate(); // killed, not closed politely
    for (let i = 3; i < 6; i++) await note(8000 + i, 2); // two logs per block: the cursor is (block, logIndex)

    const second = await rawClient();
    const sub2 = (
      await second.call('eth_subscribe', [
        'logs',
        { address, topics: [NOTED] },
        { resumeAfter: { blockNumber: last.blockNumber, blockHash: last.blockHash, logIndex: last.logIndex } },
      ])
    ).result as string;
    expect(sub2).toMatch(/^0x[0-9a-f]{32}$/);
    await note(8006);
    await waitFor(
      'the missed logs and the live one',
      async () => (second.notes(sub2).length >= 7 ? true : undefined),
      20_000,
    );
    await new Promise((r) => setTimeout(r, 500));
    const ns = second.notes(sub2).map((l) => Number(BigInt((l.topics as string[])[1]!)));
    expect(ns).toEqual([8003, 8003, 8004, 8004, 8005, 8005, 8006]);

    const stale = await second.call('eth_subscribe', [
      'logs',
      { address },
      { resumeAfter: { blockNumber: last.blockNumber, blockHash: `0x${'ab'.repeat(32)}` } },
    ]);
    expect(stale.error?.message).toContain('no longer on the canonical chain');
    second.ws.close();
  }, 120_000);

  it('behavior: a resume from a block this endpoint has not reached yet (another replica behind the load balancer was ahead) waits for it, then goes on live', async () => {
    const address = await outer.getAddress();
    const c = await rawClient();
    // 500 blocks at once, straight at the node: the endpoint takes them in turn (each block's logs read), so the
    // newest is ahead of it for a moment, as it is when another replica sent it first.
    await provider.send('anvil_mine', ['0x1f4']);
    const head = (await provider.getBlock('latest'))!;
    const resumed = await c.call('eth_subscribe', [
      'logs',
      { address, topics: [NOTED] },
      { resumeAfter: { blockNumber: ethers.toQuantity(head.number), blockHash: head.hash, logIndex: '0x0' } },
    ]);
    expect(resumed.error).toBeUndefined();
    const sub = resumed.result as string;
    await note(8100);
    await waitFor('the live log', async () => (c.notes(sub).length >= 1 ? true : undefined), 20_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(c.notes(sub).map((l) => Number(BigInt((l.topics as string[])[1]!)))).toEqual([8100]);
    // A block that does not exist anywhere yet is still refused, once the wait is over.
    const ahead = await c.call('eth_subscribe', [
      'logs',
      { address },
      { resumeAfter: { blockNumber: ethers.toQuantity(head.number + 1000), blockHash: head.hash, logIndex: '0x0' } },
    ]);
    expect(ahead.error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/is ahead of the endpoint's head \d+ \(waited 5000 ms for it\)/),
    });
    c.ws.close();
  }, 60_000);

  it('error: bad subscriptions, the per-socket cap and a wrong path are refused naming the problem', async () => {
    const c = await rawClient();
    expect((await c.call('eth_subscribe', ['pendingLogs'])).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('kind'),
    });
    expect((await c.call('eth_subscribe', ['newHeads', { address: '0x' + '11'.repeat(20) }])).error?.message).toContain(
      'newHeads takes no filter',
    );
    expect((await c.call('eth_subscribe', ['logs', { address: '0x12' }])).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('param 1 (filter)'),
    });
    const validate = await resultValidator();
    for (let i = 0; i < 5; i++) {
      const id = (await c.call('eth_subscribe', ['newHeads'])).result;
      expect(validate('eth_subscribe', id)).toBeUndefined();
    }
    expect((await c.call('eth_subscribe', ['newHeads'])).error).toMatchObject({
      code: -32005,
      message: expect.stringContaining('RPC_WS_MAX_SUBSCRIPTIONS'),
    });
    // Every other method answers as over HTTP.
    expect((await c.call('eth_chainId')).result).toBe('0x539');
    const unsub = (await c.call('eth_unsubscribe', ['0x' + 'ab'.repeat(16)])).result;
    expect(unsub).toBe(false); // not this socket's
    expect(validate('eth_unsubscribe', unsub)).toBeUndefined();
    expect((await c.call('admin_peers')).error?.code).toBe(-32601);
    c.ws.close();
    // Over HTTP there is no socket to push to.
    expect((await call(rpc.url, 'eth_subscribe', ['newHeads'])).error).toMatchObject({
      code: -32601,
      message: expect.stringContaining('needs a WebSocket connection'),
    });
    const wrong = new WebSocket(wsUrl + '/other');
    const status = await new Promise<number>((resolve) =>
      wrong.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)),
    );
    expect(status).toBe(404);
  }, 60_000);

  for (const [cap, env, reason] of [
    ['its own byte cap', { RPC_WS_MAX_BUFFERED_BYTES: '65536' }, 'slow'],
    [
      'the total byte cap of all sockets',
      { RPC_WS_MAX_TOTAL_BUFFERED_BYTES: '1048576', RPC_WS_MAX_BUFFERED_BYTES: '104857600' },
      'total',
    ],
  ] as const) {
    it(`behavior: a client that stops reading is cut off at ${cap} while another client keeps being served`, async () => {
      // An endpoint of its own with the smallest caps, so the burst test above keeps the defaults.
      const tight = await startTestRpc({
        db: testDb.client,
        schema: testDb.schema(`rpc_${reason}`),
        upstreams: [anvil.url],
        env,
      });
      const tightUrl = tight.url.replace('http://', 'ws://');
      const slow = await rawClient(tightUrl);
      const raw = (slow.ws as unknown as { _socket: { pause(): void } })._socket;
      raw.pause();
      // Large answers the client never reads: 40 × every log of the contract (~500 logs, ~300 KB each), far past
      // the cap plus what the kernel buffers on loopback.
      const address = await outer.getAddress();
      for (let i = 0; i < 40; i++)
        slow.ws.send(
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1000 + i,
            method: 'eth_getLogs',
            params: [{ fromBlock: '0x0', toBlock: 'latest', address }],
          }),
        );
      const metrics = async () => await tight.common.metrics.getSingleMetricAsString('l2stack_rpc_ws_closed_total');
      const healthy = await rawClient(tightUrl);
      await waitFor(
        'the slow client to be cut off',
        async () => ((await metrics()).includes(`reason="${reason}"`) ? true : undefined),
        60_000,
        250,
      );
      expect((await healthy.call('eth_blockNumber')).result).toMatch(/^0x/);
      healthy.ws.close();
      slow.ws.terminate();
      await tight.stop();
    }, 120_000);
  }
});
