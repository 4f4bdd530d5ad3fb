import { request } from 'node:http';
import { ethers } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mined } from '../../src/common/chain/mined.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { openTestDb } from '../helpers/db.js';
import { chain, deployOuter, startTestRpc, wallet } from './helpers.js';
import { handleBody, replyText, type Reply } from '../../src/rpc/envelope.js';
import type { CallResult, CallTarget } from '../../src/rpc/types.js';
import { LARGE_ANSWER_CHARS, RawJson } from '../../src/rpc/upstream/raw-json.js';

/**
 * A node's large answer leaves as chunks of bytes around its UTF-8, encoded once per answer (envelope.ts):
 * these check that the chunks make the same JSON a string would, alone and inside batches, with the id as
 * written, and that one encoding serves many replies; then the endpoint itself with a node's 1,000 logs.
 */
const big = JSON.stringify(
  Array.from({ length: 400 }, (_, i) => ({
    logIndex: `0x${i.toString(16)}`,
    data: `0x${'ab'.repeat(32)}`,
    note: 'é✓',
  })),
);
const answer = new RawJson(big);
const calls: Record<string, () => CallResult> = {
  big: () => ({ result: answer }),
  small: () => ({ result: new RawJson('"0x1"') }),
  parsed: () => ({ result: { a: 1 } }),
  fails: () => ({ error: { code: -32000, message: 'nope' } }),
};
const dispatcher: CallTarget = { call: (method: string) => Promise.resolve(calls[method]!()) };
const options = { maxBatch: 10, limiter: { take: () => Promise.resolve({ ok: true as const }) } };
const body = async (text: string): Promise<Reply> => (await handleBody(text, dispatcher, options as never)).body!;

let anvil: Anvil;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let logsQuery: unknown;

beforeAll(async () => {
  // The real endpoint in front of anvil, and a block of 1,000 logs (~600 KB of eth_getLogs answer).
  const { anvil: a, provider } = await chain();
  anvil = a;
  const outer = await deployOuter(wallet(0, provider));
  const tx = (await outer.getFunction('note')(1n, ethers.id('large'), 1000n, {
    gasLimit: 29_000_000n,
  })) as ethers.TransactionResponse;
  const block = `0x${(await mined(tx)).blockNumber.toString(16)}`;
  logsQuery = { fromBlock: block, toBlock: block, address: await outer.getAddress() };
  db = await openTestDb();
  rpc = await startTestRpc({ db: db.client, schema: db.schema('rpc'), upstreams: [anvil.url] });
}, 120_000);

afterAll(async () => {
  await rpc?.stop();
  await db?.close();
  await anvil?.stop();
});

function post(target: string, text: string): Promise<{ length: number; received: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(target, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ length: Number(res.headers['content-length']), received: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(text);
  });
}

describe('large answers', () => {
  it('behavior: a large pass-through answer goes out as chunks that make the reply a string would, the id as written', async () => {
    expect(big.length).toBeGreaterThan(LARGE_ANSWER_CHARS);
    const reply = await body('{"jsonrpc":"2.0","id":"0x0a","method":"big","params":[]}');
    expect(Array.isArray(reply)).toBe(true);
    expect(replyText(reply)).toBe(`{"jsonrpc":"2.0","id":"0x0a","result":${big}}`);
    // Encoded once: the same bytes serve the next reply (as for every hit of a cached answer).
    const again = (await body('{"jsonrpc":"2.0","id":2,"method":"big","params":[]}')) as Buffer[];
    expect(again[1]).toBe((reply as Buffer[])[1]);
  });

  it('behavior: a batch mixing large, small, parsed and failed answers and a notification keeps order and is one JSON array', async () => {
    const reply = await body(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'small' },
        { jsonrpc: '2.0', id: 2, method: 'big' },
        { jsonrpc: '2.0', method: 'big' },
        { jsonrpc: '2.0', id: 3, method: 'fails' },
        { jsonrpc: '2.0', id: 4, method: 'parsed' },
      ]),
    );
    expect(JSON.parse(replyText(reply))).toEqual([
      { jsonrpc: '2.0', id: 1, result: '0x1' },
      { jsonrpc: '2.0', id: 2, result: JSON.parse(big) },
      { jsonrpc: '2.0', id: 3, error: { code: -32000, message: 'nope' } },
      { jsonrpc: '2.0', id: 4, result: { a: 1 } },
    ]);
  });

  it("behavior: over HTTP (the endpoint itself) a 1,000-log answer, alone, twice (then from the cache) and in a batch, is the node's answer with our ids and an exact content-length", async () => {
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'eth_getLogs', params: [logsQuery] });
    const direct = JSON.parse((await post(anvil.url, JSON.stringify(call(1)))).received.toString('utf8')) as {
      result: unknown[];
    };
    expect(direct.result.length).toBe(1000);
    for (const id of [7, 8]) {
      const { length, received } = await post(rpc.url, JSON.stringify(call(id)));
      expect(length).toBe(received.length);
      expect(length).toBeGreaterThan(LARGE_ANSWER_CHARS);
      expect(JSON.parse(received.toString('utf8'))).toEqual({ jsonrpc: '2.0', id, result: direct.result });
    }
    const batch = await post(
      rpc.url,
      JSON.stringify([call(1), { jsonrpc: '2.0', id: 2, method: 'eth_chainId', params: [] }, call(3)]),
    );
    expect(batch.length).toBe(batch.received.length);
    const answers = JSON.parse(batch.received.toString('utf8')) as { id: number; result: unknown }[];
    expect(answers.map((a) => a.id)).toEqual([1, 2, 3]);
    expect(answers[2]!.result).toEqual(direct.result);
  });
});
