import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { openTestDb } from '../helpers/db.js';
import { call, chain, countingUpstream, post, startTestRpc, type CountingUpstream } from './helpers.js';
import type { Anvil } from '../../src/devnet/anvil.js';

let anvil: Anvil;
let upstream: CountingUpstream;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let db: Awaited<ReturnType<typeof openTestDb>>;

beforeAll(async () => {
  ({ anvil } = await chain());
  upstream = await countingUpstream(anvil.url);
  db = await openTestDb();
  rpc = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc'),
    upstreams: [upstream.url],
    env: { RPC_MAX_BATCH: '100', RPC_UPSTREAM_HEAD_POLL_MS: '60000' },
  });
});

afterAll(async () => {
  await rpc?.stop();
  await upstream?.close();
  await anvil?.stop();
  await db?.close();
});

/** Runs `fn` and returns how many requests reached the upstream meanwhile. */
async function upstreamCallsDuring(fn: () => Promise<void>): Promise<number> {
  const before = upstream.total();
  await fn();
  return upstream.total() - before;
}

describe('JSON-RPC 2.0 envelope', () => {
  it('behavior: a single call is answered with the same id', async () => {
    const r = await post(rpc.url, '{"jsonrpc":"2.0","id":7,"method":"eth_chainId","params":[]}');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
    expect(JSON.parse(r.text)).toEqual({ jsonrpc: '2.0', id: 7, result: '0x539' });
  });

  it('behavior: ids are echoed exactly (strings, big numbers, fractions, null)', async () => {
    for (const id of ['"abc"', '""', '12345678901234567890123', '1.50', '-3', '0', 'null', '1e3']) {
      const r = await post(rpc.url, `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId"}`);
      expect(r.text).toBe(`{"jsonrpc":"2.0","id":${id},"result":"0x539"}`);
    }
    const batch = await post(
      rpc.url,
      '[{"jsonrpc":"2.0","id":98765432109876543210,"method":"eth_chainId"},{"jsonrpc":"2.0","id":"x","method":"eth_chainId"}]',
    );
    expect(batch.text).toBe(
      '[{"jsonrpc":"2.0","id":98765432109876543210,"result":"0x539"},{"jsonrpc":"2.0","id":"x","result":"0x539"}]',
    );
  });

  it('error: malformed JSON is -32700 with id null and HTTP 200, never an HTML page', async () => {
    for (const body of ['{', '{"jsonrpc":"2.0",', 'not json', '']) {
      const r = await post(rpc.url, body);
      expect(r.status).toBe(200);
      const j = JSON.parse(r.text);
      expect(j.id).toBeNull();
      expect(j.error.code).toBe(-32700);
    }
  });

  it('error: invalid request objects are -32600', async () => {
    const cases = [
      '{"id":1,"method":"eth_chainId"}',
      '{"jsonrpc":"1.0","id":1,"method":"eth_chainId"}',
      '{"jsonrpc":"2.0","id":1,"method":5}',
      '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":"x"}',
      '{"jsonrpc":"2.0","id":{},"method":"eth_chainId"}',
      '42',
      '"eth_chainId"',
    ];
    for (const body of cases) {
      const j = JSON.parse((await post(rpc.url, body)).text);
      expect(j.error.code, body).toBe(-32600);
    }
    const j = JSON.parse((await post(rpc.url, '{"jsonrpc":"1.0","id":"keep","method":"eth_chainId"}')).text);
    expect(j.id).toBe('keep');
  });

  it('behavior: notifications get no reply; a batch of notifications gets an empty 204', async () => {
    const single = await post(rpc.url, '{"jsonrpc":"2.0","method":"eth_chainId","params":[]}');
    expect(single.status).toBe(204);
    expect(single.text).toBe('');
    const batch = await post(
      rpc.url,
      '[{"jsonrpc":"2.0","method":"eth_chainId"},{"jsonrpc":"2.0","method":"eth_blockNumber"}]',
    );
    expect(batch.status).toBe(204);
    const mixed = JSON.parse(
      (
        await post(
          rpc.url,
          '[{"jsonrpc":"2.0","method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}]',
        )
      ).text,
    );
    expect(mixed).toEqual([{ jsonrpc: '2.0', id: 2, result: '0x539' }]);
  });

  it('behavior: batches are answered in request order, each call on its own', async () => {
    const body = JSON.stringify([
      { jsonrpc: '2.0', id: 'a', method: 'eth_blockNumber', params: [] },
      { jsonrpc: '2.0', id: 'b', method: 'anvil_mine', params: [] },
      1,
      { jsonrpc: '2.0', id: 'c', method: 'eth_getBalance', params: ['0x12'] },
      { jsonrpc: '2.0', id: 'd', method: 'eth_chainId', params: [] },
    ]);
    const replies = JSON.parse((await post(rpc.url, body)).text);
    expect(replies.map((r: { id: unknown }) => r.id)).toEqual(['a', 'b', null, 'c', 'd']);
    expect(replies[0].result).toMatch(/^0x/);
    expect(replies[1].error.code).toBe(-32601);
    expect(replies[2].error.code).toBe(-32600);
    expect(replies[3].error.code).toBe(-32602);
    expect(replies[4].result).toBe('0x539');
  });

  it('error: an empty batch is one -32600', async () => {
    const r = await post(rpc.url, '[]');
    expect(r.status).toBe(200);
    const j = JSON.parse(r.text);
    expect(Array.isArray(j)).toBe(false);
    expect(j).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('error: a batch over RPC_MAX_BATCH is refused as a whole, naming the limit, without reaching the upstream', async () => {
    const calls = Array.from({ length: 101 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_chainId' }));
    let j: { id: unknown; error: { code: number; message: string } } | undefined;
    const n = await upstreamCallsDuring(async () => {
      j = JSON.parse((await post(rpc.url, JSON.stringify(calls))).text);
    });
    expect(n).toBe(0);
    expect(j!.id).toBeNull();
    expect(j!.error.code).toBe(-32600);
    expect(j!.error.message).toContain('at most 100');
    expect(j!.error.message).toContain('RPC_MAX_BATCH');
    const ok = JSON.parse((await post(rpc.url, JSON.stringify(calls.slice(0, 100)))).text);
    expect(ok).toHaveLength(100);
  });

  it('error: a body over RPC_MAX_BODY_BYTES is HTTP 413 with -32600 naming the limit', async () => {
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_sendRawTransaction',
      params: [`0x${'ab'.repeat(600_000)}`],
    });
    const r = await post(rpc.url, big);
    expect(r.status).toBe(413);
    const j = JSON.parse(r.text);
    expect(j.error.code).toBe(-32600);
    expect(j.error.message).toContain('1048576');
    expect(j.error.message).toContain('RPC_MAX_BODY_BYTES');
  });

  it('behavior: GET / and unknown paths answer JSON, not HTML', async () => {
    const r = await fetch(`${rpc.url}/`);
    expect(r.status).toBe(405);
    expect(r.headers.get('content-type')).toMatch(/json/);
    const n = await fetch(`${rpc.url}/nope`);
    expect(n.status).toBe(404);
    expect(n.headers.get('content-type')).toMatch(/json/);
  });
});

describe('allow-list', () => {
  const refused = [
    'anvil_setBalance',
    'evm_mine',
    'hardhat_impersonateAccount',
    'hardhat_reset',
    'debug_setHead',
    'admin_nodeInfo',
    'personal_sign',
    'miner_start',
    'engine_newPayloadV3',
    'engine_forkchoiceUpdatedV3',
    'eth_sendTransaction',
    'eth_sign',
    'eth_accounts',
    'txpool_content',
    'rpc.other',
  ];
  for (const method of refused) {
    it(`error: ${method} is -32601 naming it and never reaches an upstream`, async () => {
      let r: Awaited<ReturnType<typeof call>> | undefined;
      const n = await upstreamCallsDuring(async () => {
        r = await call(rpc.url, method, ['0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266', '0x1']);
      });
      expect(n).toBe(0);
      expect(upstream.counts.get(method)).toBeUndefined();
      expect(r!.error!.code).toBe(-32601);
      expect(r!.error!.message).toContain(method);
    });
  }

  it('behavior: rpc.discover returns specs/rpc.openrpc.json', async () => {
    const r = await call(rpc.url, 'rpc.discover');
    expect(r.result).toEqual(
      JSON.parse(readFileSync(new URL('../../specs/rpc.openrpc.json', import.meta.url), 'utf8')),
    );
  });
});

describe('params', () => {
  it('error: wrong params are -32602 naming the param and why, without an upstream call', async () => {
    const cases: [string, unknown[], RegExp][] = [
      ['eth_getBalance', ['0x12'], /param 0 \(address\).*"0x12" is not Address/],
      ['eth_getBalance', [], /missing required param 0 \(address\)/],
      ['eth_getBalance', ['0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266', 'soon'], /param 1 \(block\).*"soon"/],
      ['eth_getLogs', [{ fromBlock: 'pending' }], /filter\.fromBlock.*"pending".*latest or earliest/],
      ['eth_getLogs', [{ toBlock: 'finalized' }], /filter\.toBlock.*"finalized"/],
      ['eth_newFilter', [{ fromBlock: 'safe' }], /filter\.fromBlock.*"safe"/],
      ['eth_getLogs', [{ address: '0x1' }], /filter\.address/],
      ['eth_getLogs', [{ topics: [1] }], /filter\.topics\[0\]/],
      ['eth_getLogs', [{ bogus: 1 }], /unknown member "bogus"/],
      ['eth_chainId', [1], /takes no params, got 1/],
      ['eth_getBalance', ['0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266', 'latest', 3], /at most 2 \(address, block\)/],
      ['eth_getBlockByNumber', ['latest'], /missing required param 1 \(hydrated\)/],
    ];
    for (const [method, params, message] of cases) {
      let r: Awaited<ReturnType<typeof call>> | undefined;
      const n = await upstreamCallsDuring(async () => {
        r = await call(rpc.url, method, params);
      });
      expect(n, method).toBe(0);
      expect(r!.error?.code, `${method} ${JSON.stringify(params)}`).toBe(-32602);
      expect(r!.error!.message, `${method} ${JSON.stringify(params)}`).toMatch(message);
    }
  });

  it("behavior: a call object's unknown member goes to the node, which ignores it: the same answer as anvil straight (a filter's unknown member stays refused, as anvil refuses it)", async () => {
    const to = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
    for (const method of ['eth_call', 'eth_estimateGas', 'eth_createAccessList']) {
      const params = [{ to, gass: '0x1' }, 'latest'];
      const [ours, node] = await Promise.all([call(rpc.url, method, params), call(anvil.url, method, params)]);
      expect(node.error, `anvil ${method}`).toBeUndefined();
      expect(ours, method).toEqual({ ...node, id: ours.id });
    }
    const [ours, node] = await Promise.all([
      call(rpc.url, 'eth_getLogs', [{ bogus: 1 }]),
      call(anvil.url, 'eth_getLogs', [{ bogus: 1 }]),
    ]);
    expect([ours.error?.code, node.error?.code]).toEqual([-32602, -32602]);
  });

  it('error: params by name are refused (the spec is by position)', async () => {
    const j = JSON.parse(
      (
        await post(
          rpc.url,
          '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":{"address":"0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"}}',
        )
      ).text,
    );
    expect(j.error.code).toBe(-32602);
    expect(j.error.message).toContain('by position');
  });

  it('error: tracers other than callTracer and prestateTracer are -32602 naming the allowed ones', async () => {
    const hash = `0x${'11'.repeat(32)}`;
    const cases: unknown[] = [
      {},
      { tracer: 'flatCallTracer' },
      { tracer: '{data: [], fault: function() {}, result: function() { return 1 }}' },
      { tracer: 'callTracer', tracerConfig: { bogus: true } },
    ];
    for (const options of cases) {
      for (const [method, params] of [
        ['debug_traceTransaction', [hash, options]],
        ['debug_traceCall', [{ to: '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266' }, 'latest', options]],
        ['debug_traceBlockByNumber', ['latest', options]],
      ] as const) {
        let r: Awaited<ReturnType<typeof call>> | undefined;
        const n = await upstreamCallsDuring(async () => {
          r = await call(rpc.url, method, [...params]);
        });
        expect(n).toBe(0);
        expect(r!.error!.code).toBe(-32602);
        if ((options as { tracerConfig?: unknown }).tracerConfig === undefined)
          expect(r!.error!.message, JSON.stringify(options)).toMatch(/callTracer, prestateTracer/);
      }
    }
    const missing = await call(rpc.url, 'debug_traceTransaction', [hash]);
    expect(missing.error!.message).toMatch(/missing required param 1 \(options\)/);
  });
});

describe('operations', () => {
  it('behavior: /health/live, /health/ready and /metrics answer', async () => {
    expect((await fetch(`${rpc.url}/health/live`)).status).toBe(200);
    const ready = await fetch(`${rpc.url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      status: 'ok',
      checks: [
        { name: 'database', ok: true },
        { name: 'upstreams', ok: true, detail: expect.stringMatching(/^upstream 1 healthy at head \d+$/) },
        { name: 'node', ok: true },
      ],
    });
    const metrics = await (await fetch(`${rpc.url}/metrics`)).text();
    expect(metrics).toMatch(/l2stack_rpc_calls_total\{method="eth_chainId",outcome="ok"\} \d+/);
    expect(metrics).toMatch(/l2stack_rpc_calls_total\{method="other",outcome="-32601"\} \d+/);
    expect(metrics).toMatch(/l2stack_rpc_call_duration_seconds_bucket/);
    expect(metrics).toMatch(/l2stack_rpc_upstream_up\{upstream="u0"\} 1/);
  });

  it('behavior: CORS preflight is answered for browsers', async () => {
    const r = await fetch(rpc.url, {
      method: 'OPTIONS',
      headers: { origin: 'https://dapp.example', 'access-control-request-method': 'POST' },
    });
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
  });
});
