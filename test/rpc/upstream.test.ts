import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { call, chain, countingUpstream, post, result, startTestRpc, wallet } from './helpers.js';
import { reservePort, startAnvil, type Anvil } from '../../src/devnet/anvil.js';

let db: Awaited<ReturnType<typeof openTestDb>>;
let anvil: Anvil;
const stops: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  ({ anvil } = await chain());
  db = await openTestDb();
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await anvil?.stop();
  await db?.close();
});

async function rpcWith(upstreams: string[], env: Record<string, string> = {}) {
  const r = await startTestRpc({ db: db.client, schema: db.schema('rpc'), upstreams, env });
  stops.push(r.stop);
  return r;
}

describe('upstream pool', () => {
  it('behavior: reads fail over from a dead upstream to a live one; readiness and metrics show which is down', async () => {
    const deadPort = await reservePort('127.0.0.1', 0, 'test');
    const rpc = await rpcWith([`http://127.0.0.1:${deadPort}`, anvil.url]);
    for (let i = 0; i < 5; i++) expect(await result(rpc.url, 'eth_chainId')).toBe('0x539');
    const ready = (await (await fetch(`${rpc.url}/health/ready`)).json()) as {
      status: string;
      checks: { name: string; ok: boolean; detail: string }[];
    };
    const upstreams = ready.checks.find((c) => c.name === 'upstreams');
    expect(ready.status).toBe('ok'); // one healthy upstream is enough: reads fail over
    expect(upstreams?.ok).toBe(true);
    // The public port numbers them and names no host (the operator port has the URLs: operator-port.test.ts).
    expect(upstreams?.detail).toMatch(/^upstream 1 down; upstream 2 healthy at head \d+$/);
    const metrics = await (await fetch(`${rpc.url}/metrics`)).text();
    expect(metrics).toMatch(/l2stack_rpc_upstream_up\{upstream="u0"\} 0/);
    expect(metrics).toMatch(/l2stack_rpc_upstream_up\{upstream="u1"\} 1/);
  });

  it('behavior: eth_sendRawTransaction is never sent twice after an ambiguous failure', async () => {
    const first = await countingUpstream(anvil.url);
    const second = await countingUpstream(anvil.url);
    stops.push(first.close, second.close);
    first.hold.add('eth_sendRawTransaction');
    second.hold.add('eth_sendRawTransaction');
    const rpc = await rpcWith([first.url, second.url], { RPC_UPSTREAM_TIMEOUT_MS: '1500' });
    const signer = wallet(4);
    const raw = await signer.signTransaction({
      to: wallet(5).address,
      value: 1n,
      nonce: 0,
      gasLimit: 21_000n,
      maxFeePerGas: 10n ** 10n,
      maxPriorityFeePerGas: 1n,
      chainId: 1337n,
      type: 2,
    });
    const r = await call(rpc.url, 'eth_sendRawTransaction', [raw]);
    expect(r.error!.code).toBe(-32002);
    expect(r.error!.message).toMatch(/not sent again/);
    const sent = (first.counts.get('eth_sendRawTransaction') ?? 0) + (second.counts.get('eth_sendRawTransaction') ?? 0);
    expect(sent).toBe(1);
    // Reads still fail over in the same situation.
    first.hold.add('eth_getBalance');
    expect(await result(rpc.url, 'eth_getBalance', [wallet(4).address, 'latest'])).toMatch(/^0x/);
  });

  it('behavior: an upstream killed mid-run gives clear errors while down and recovers when back', async () => {
    const port = await reservePort('127.0.0.1', 0, 'test');
    let node = await startAnvil({ port, chainId: 1337 });
    stops.push(() => node.stop());
    const rpc = await rpcWith([node.url], { RPC_UPSTREAM_HEAD_POLL_MS: '50', RPC_UPSTREAM_TIMEOUT_MS: '3000' });
    expect(await result(rpc.url, 'eth_chainId')).toBe('0x539');
    await node.stop();
    // eth_gasPrice always asks a node (eth_blockNumber may still come from the head tracker until the
    // closed newHeads subscription has been noticed, which raced this call under load).
    const down = await post(rpc.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_gasPrice', params: [] }));
    expect(down.status).toBe(200);
    const error = JSON.parse(down.text).error;
    expect(error.code).toBe(-32002);
    expect(error.message).toMatch(/no upstream node is available: u0: upstream connection failed: ECONNREFUSED/);
    await expect.poll(async () => (await fetch(`${rpc.url}/health/ready`)).status).toBe(503);
    node = await startAnvil({ port, chainId: 1337 });
    expect(await result(rpc.url, 'eth_chainId')).toBe('0x539');
    await expect.poll(async () => (await fetch(`${rpc.url}/health/ready`)).status).toBe(200);
  });

  it('behavior: an upstream on another chain id is never used when RPC_CHAIN_ID is set', async () => {
    const other = await startAnvil({ port: 0, chainId: 99 });
    stops.push(() => other.stop());
    const rpc = await rpcWith([other.url, anvil.url], { RPC_CHAIN_ID: '1337' });
    for (let i = 0; i < 3; i++) expect(await result(rpc.url, 'eth_chainId')).toBe('0x539');
  });
});

describe('rate limit', () => {
  for (const store of ['memory', 'postgres'] as const) {
    it(`behavior: per client, every call of a batch counts; over the limit HTTP 429 + -32005 with Retry-After (${store})`, async () => {
      const rpc = await rpcWith([anvil.url], {
        RPC_RATE_LIMIT_PER_SECOND: '1',
        RPC_RATE_LIMIT_BURST: '20',
        RPC_RATE_LIMIT_STORE: store,
      });
      const batch = (n: number) =>
        JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_chainId' })));
      const began = Date.now();
      // The whole burst (20) in one batch, then the same again: served only if the first batch cost less than one
      // unit a call, or 20 s went by (1 unit a second comes back; a gap of seconds under load is not 20 s).
      expect((await post(rpc.url, batch(20))).status).toBe(200);
      const refused = await post(rpc.url, batch(20));
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const errors = JSON.parse(refused.text);
      expect(errors).toHaveLength(20);
      expect(errors.map((e: { id: number }) => e.id)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(errors[0].error.code).toBe(-32005);
      expect(errors[0].error.data.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      // Single calls back to back: each is served only with a unit that came back meanwhile, so the first
      // without one is refused, and no more are served than seconds went by.
      const single = JSON.stringify({ jsonrpc: '2.0', id: 'x', method: 'eth_chainId' });
      let served = 0;
      let again = await post(rpc.url, single);
      while (again.status === 200 && served < 10) {
        served++;
        again = await post(rpc.url, single);
      }
      expect(again.status).toBe(429);
      expect(served).toBeLessThanOrEqual(Math.ceil((Date.now() - began) / 1000));
      expect(JSON.parse(again.text)).toMatchObject({ id: 'x', error: { code: -32005 } });
      // Another client (a different address behind a trusted proxy would be another key) is not affected:
      expect((await fetch(`${rpc.url}/health/live`)).status).toBe(200);
    });
  }

  it('behavior: behind a trusted proxy the client is the forwarded address', async () => {
    const rpc = await rpcWith([anvil.url], {
      RPC_RATE_LIMIT_PER_SECOND: '1',
      RPC_RATE_LIMIT_BURST: '20',
      RPC_TRUSTED_PROXY_HOPS: '1',
    });
    // The burst (20) in one batch, then the same again: refused unless 20 s went by, whatever the machine's load.
    const body = JSON.stringify(
      Array.from({ length: 20 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_chainId' })),
    );
    expect((await post(rpc.url, body, { 'x-forwarded-for': '10.0.0.1' })).status).toBe(200);
    expect((await post(rpc.url, body, { 'x-forwarded-for': '10.0.0.1' })).status).toBe(429);
    expect((await post(rpc.url, body, { 'x-forwarded-for': '10.0.0.2' })).status).toBe(200);
  });
});
