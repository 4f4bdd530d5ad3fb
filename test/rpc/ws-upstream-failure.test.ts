import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import WebSocket from 'ws';
import type { Anvil } from '../../src/devnet/anvil.js';
import { openTestDb } from '../helpers/db.js';
import { waitFor } from '../helpers/chain.js';
import {
  chain,
  countingUpstream,
  deployOuter,
  result,
  startTestRpc,
  wallet,
  type CountingUpstream,
} from './helpers.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * Subscriptions when the node fails a call: the endpoint's one eth_getLogs per block goes through a real
 * HTTP proxy in front of anvil that fails chosen requests (HTTP 502, then the node's JSON-RPC error), and
 * every subscriber must still get every log and every head exactly once, in chain order.
 */
let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let proxy: CountingUpstream;
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  proxy = await countingUpstream(anvil.url);
  testDb = await openTestDb();
  rpc = await startTestRpc({ db: testDb.client, schema: testDb.schema('rpc'), upstreams: [proxy.url] });
}, 120_000);
afterAll(async () => {
  await rpc?.stop();
  await testDb?.close();
  await proxy?.close();
  await anvil?.stop();
});

interface Note {
  blockNumber?: string;
  logIndex?: string;
  transactionHash?: string;
  number?: string;
  removed?: boolean;
}

async function subscriber(url: string) {
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const notes = new Map<string, Note[]>();
  const answers = new Map<number, (r: { result?: unknown; error?: unknown }) => void>();
  ws.on('message', (data) => {
    const msg = JSON.parse(data.toString()) as {
      id?: number;
      result?: unknown;
      error?: unknown;
      params?: { subscription: string; result: Note };
    };
    if (msg.params)
      notes.set(msg.params.subscription, [...(notes.get(msg.params.subscription) ?? []), msg.params.result]);
    else answers.get(msg.id!)?.(msg);
  });
  let id = 0;
  return {
    ws,
    notes: (sub: string) => notes.get(sub) ?? [],
    async subscribe(params: unknown[]): Promise<string> {
      const n = ++id;
      const answer = new Promise<{ result?: unknown; error?: unknown }>((resolve) => answers.set(n, resolve));
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: n, method: 'eth_subscribe', params }));
      const r = await answer;
      if (r.error) throw new Error(JSON.stringify(r.error));
      return r.result as string;
    },
  };
}

describe('subscriptions when the node fails eth_getLogs', () => {
  it('behavior: a block whose eth_getLogs fails (HTTP 502, then a JSON-RPC error) is held and asked again: every log and head arrives exactly once, in order', async () => {
    const outer = await deployOuter(wallet(0, provider));
    const address = (await outer.getAddress()).toLowerCase();
    const client = await subscriber(rpc.url.replace('http://', 'ws://'));
    const logsSub = await client.subscribe(['logs', { address }]);
    const headsSub = await client.subscribe(['newHeads']);
    const start = await provider.getBlockNumber();
    // The first two eth_getLogs the proxy sees from now on fail: the endpoint's fetch for the next block.
    proxy.failNext.set('eth_getLogs', ['http', 'rpc']);
    for (let i = 0; i < 5; i++) {
      const tx = (await outer.getFunction('note')(
        BigInt(i),
        ethers.id('held'),
        BigInt(i + 1),
      )) as ethers.TransactionResponse;
      await mined(tx);
    }
    const end = await provider.getBlockNumber();
    const truth = (await result(anvil.url, 'eth_getLogs', [
      { fromBlock: `0x${(start + 1).toString(16)}`, toBlock: `0x${end.toString(16)}`, address },
    ])) as Note[];
    expect(truth).toHaveLength(15); // 1+2+3+4+5
    const key = (l: Note) => `${BigInt(l.blockNumber!)}:${BigInt(l.logIndex!)}:${l.transactionHash}`;
    await waitFor('every log delivered', async () => (client.notes(logsSub).length >= truth.length ? true : undefined));
    await waitFor('every head delivered', async () =>
      client.notes(headsSub).some((h) => BigInt(h.number!) === BigInt(end)) ? true : undefined,
    );
    expect(proxy.failed).toEqual(['eth_getLogs:http', 'eth_getLogs:rpc']);
    // Nothing late and doubled: give a stray retry time to show itself.
    await new Promise((r) => setTimeout(r, 500));
    expect(client.notes(logsSub).map(key)).toEqual(truth.map(key));
    expect(client.notes(logsSub).every((l) => l.removed === false || l.removed === undefined)).toBe(true);
    // The deploy's block may arrive after the subscription (the head is polled): the ones made here must all come,
    // once, in order.
    const heads = client.notes(headsSub).map((h) => Number(BigInt(h.number!)));
    expect(heads.filter((n) => n > start)).toEqual(Array.from({ length: end - start }, (_, i) => start + 1 + i));
    expect(heads.filter((n) => n <= start).length).toBeLessThanOrEqual(1);
    client.ws.close();
  });
});
