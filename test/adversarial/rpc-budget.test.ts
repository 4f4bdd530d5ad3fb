import { ethers } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Anvil } from '../../src/devnet/anvil.js';
import { deployOuter, post, wallet } from '../rpc/helpers.js';
import { startCanary } from './canary.js';
import { blockNumberCanary, chain, openTestDb, rssMiB, startRpcUnderTest, type RpcUnderTest } from './rpc-harness.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * Issue 18, item 8: one batch of 100 eth_getLogs earliest..latest returned 35 MB (+260 MiB RSS), and a
 * client could repeat it every ~2 s within the rate limit. Now a reply has a byte budget
 * (RPC_MAX_RESPONSE_BYTES: calls past it get -32005 naming it) and answers are charged to the client's
 * rate-limit bucket by size (RPC_RATE_LIMIT_BYTES_PER_UNIT), so a heavy client is limited before a light one.
 */
let anvil: Anvil;
let db: Awaited<ReturnType<typeof openTestDb>>;
const stops: (() => Promise<unknown>)[] = [];
const LOGS = 500;

type Reply = { id: unknown; result?: unknown; error?: { code: number; message: string; data?: unknown } };
const allLogs = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'eth_getLogs',
  params: [{ fromBlock: 'earliest', toBlock: 'latest' }],
});

async function rpc(env: Record<string, string> = {}): Promise<RpcUnderTest> {
  const r = await startRpcUnderTest({ db, schema: db.schema('rpc'), anvil, env });
  stops.push(r.stop);
  return r;
}

beforeAll(async () => {
  let provider: ethers.JsonRpcProvider;
  ({ anvil, provider } = await chain());
  db = await openTestDb();
  // A chain with many logs: 500 Noted events (~280 KB as JSON) in two transactions.
  const outer = await deployOuter(wallet(0, provider));
  for (let i = 0; i < 2; i++)
    await mined(
      (await outer.getFunction('note')(BigInt(i), ethers.id('budget'), BigInt(LOGS / 2))) as ethers.TransactionResponse,
    );
  provider.destroy();
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await anvil?.stop();
  await db?.close();
});

describe('adversarial: response budget', () => {
  it('behavior: a batch of 100 eth_getLogs over many logs is truncated at RPC_MAX_RESPONSE_BYTES with per-call -32005', async () => {
    const budget = 4 * 1_048_576;
    const endpoint = await rpc({ RPC_MAX_RESPONSE_BYTES: String(budget) });
    const canary = blockNumberCanary('rpc-budget 100 getLogs', endpoint.url);
    const rssBefore = rssMiB();
    const r = await post(endpoint.url, JSON.stringify(Array.from({ length: 100 }, (_, i) => allLogs(i))));
    const rssAfter = rssMiB();
    const replies = JSON.parse(r.text) as Reply[];
    const report = await canary.stop();
    expect(report.failed).toBe(0);

    expect(r.status).toBe(200);
    expect(replies.map((x) => x.id)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    const answered = replies.filter((x) => Array.isArray(x.result));
    const refused = replies.filter((x) => x.error);
    for (const a of answered) expect(a.result).toHaveLength(LOGS);
    for (const e of refused) {
      expect(e.error).toMatchObject({ code: -32005, data: { cap: 'RPC_MAX_RESPONSE_BYTES', limit: budget } });
      expect(e.error!.message).toMatch(/^response too large: .*RPC_MAX_RESPONSE_BYTES = 4194304/);
    }
    const one = JSON.stringify(answered[0]!.result).length;
    process.stdout.write(
      `100 x eth_getLogs: ${answered.length} answered (${one} B each), ${refused.length} refused; reply ${r.text.length} B (unbounded: ~${one * 100} B); RSS ${rssBefore} -> ${rssAfter} MiB\n`,
    );
    expect(answered.length + refused.length).toBe(100);
    expect(answered.length).toBe(Math.floor(budget / one));
    // The budget counts results; ids and per-call errors add a little on top.
    expect(r.text.length).toBeLessThan(budget + 100 * 300);
    expect((await fetch(`${endpoint.url}/health/ready`)).status).toBe(200);
  });

  it('error: a single answer larger than RPC_MAX_RESPONSE_BYTES is -32005 and does not mark the node down', async () => {
    const endpoint = await rpc({ RPC_MAX_RESPONSE_BYTES: '65536' });
    const canary = blockNumberCanary('rpc-budget single answer', endpoint.url);
    const replies = await Promise.all(
      Array.from({ length: 5 }, (_, i) => post(endpoint.url, JSON.stringify(allLogs(i)))),
    );
    const report = await canary.stop();
    expect(report.failed).toBe(0);
    for (const r of replies) {
      const reply = JSON.parse(r.text) as Reply;
      expect(reply.error).toMatchObject({ code: -32005, data: { cap: 'RPC_MAX_RESPONSE_BYTES', limit: 65536 } });
      expect(reply.error!.message).toMatch(/response too large: .*larger than 65536 bytes/);
    }
    const metrics = await (await fetch(`${endpoint.url}/metrics`)).text();
    expect(metrics).toMatch(/l2stack_rpc_upstream_up\{upstream="u0"\} 1/);
  });
});

describe('adversarial: cost-weighted rate limit', () => {
  for (const store of ['memory', 'postgres'] as const) {
    it(`behavior: a client pulling big answers is limited before one asking small questions (${store})`, async () => {
      const endpoint = await rpc({
        RPC_RATE_LIMIT_PER_SECOND: '50',
        RPC_RATE_LIMIT_BURST: '100',
        RPC_RATE_LIMIT_STORE: store,
        RPC_RATE_LIMIT_BYTES_PER_UNIT: '1024',
        RPC_TRUSTED_PROXY_HOPS: '1',
      });
      // The canary comes from the socket address (no X-Forwarded-For): a bucket of its own.
      const canary = startCanary(
        `rpc-budget rate limit (${store})`,
        {
          method: 'POST',
          url: endpoint.url,
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
          ok: (status, body) =>
            status === 200 && /^0x[0-9a-f]+$/.test(String((JSON.parse(body) as { result?: unknown }).result)),
        },
        { intervalMs: 100 },
      );
      const heavy = { 'x-forwarded-for': '10.0.0.1' };
      const light = { 'x-forwarded-for': '10.0.0.2' };
      const statuses = { heavy: [] as number[], light: [] as number[] };
      let refusal: Reply | undefined;
      for (let i = 0; i < 6; i++) {
        const h = await post(endpoint.url, JSON.stringify(allLogs(i)), heavy);
        statuses.heavy.push(h.status);
        if (h.status === 429) refusal = JSON.parse(h.text) as Reply;
        const l = await post(
          endpoint.url,
          JSON.stringify({ jsonrpc: '2.0', id: i, method: 'eth_chainId', params: [] }),
          light,
        );
        statuses.light.push(l.status);
      }
      const report = await canary.stop();
      process.stdout.write(
        `rate limit (${store}): heavy ${statuses.heavy.join(',')}; light ${statuses.light.join(',')}\n`,
      );
      expect(report.failed).toBe(0);
      // Each call costs the same 1 unit up front: only the size of the answers tells the two apart.
      expect(statuses.heavy[0]).toBe(200);
      expect(statuses.heavy.slice(1)).toEqual([429, 429, 429, 429, 429]);
      expect(statuses.light).toEqual([200, 200, 200, 200, 200, 200]);
      expect(refusal!.error!.code).toBe(-32005);
      expect(refusal!.error!.message).toMatch(
        /^rate limit exceeded: 50 units per second per client \(RPC_RATE_LIMIT_PER_SECOND, burst 100\); .*RPC_RATE_LIMIT_BYTES_PER_UNIT bytes.*; retry after \d+ s$/,
      );
    });
  }
});
