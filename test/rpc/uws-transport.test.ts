import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Anvil } from '../../src/devnet/anvil.js';
import { probeUws } from '../../src/rpc/transport/uws/load.js';
import { openTestDb } from '../helpers/db.js';
import { within } from '../helpers/within.js';
import { chain, post, startTestRpc } from './helpers.js';

/**
 * RPC_TRANSPORT=uws (src/rpc/transport/uws/) beside the default node:http
 * endpoint on the same node: every kind of answer the HTTP side gives must be the same on both (status,
 * body, the headers clients read), and the limits the uWS side keeps itself (body size without a declared
 * length, a trickled body, the WebSocket's queue) must hold. `.ci/run` also runs the whole RPC suites with
 * RPC_TRANSPORT=uws. Where uWS's build cannot load (its Node ABI or glibc), nothing here runs:
 * transport-choice.test.ts checks the refusal there.
 */
const uws = probeUws();
let anvil: Anvil;
let provider: Awaited<ReturnType<typeof chain>>['provider'];
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let onNode: Awaited<ReturnType<typeof startTestRpc>>;
let onUws: Awaited<ReturnType<typeof startTestRpc>>;

const SHARED = {
  HTTP_REQUEST_TIMEOUT_MS: '1500',
  RPC_WS_MAX_SOCKETS: '3',
  RPC_WS_MAX_INFLIGHT: '1',
  RPC_WS_MAX_BUFFERED_BYTES: '65536',
};

beforeAll(async () => {
  if (!uws.ok) return;
  ({ anvil, provider } = await chain());
  testDb = await openTestDb();
  [onNode, onUws] = await Promise.all([
    startTestRpc({
      db: testDb.client,
      schema: testDb.schema('rpc_node'),
      upstreams: [anvil.url],
      env: { ...SHARED, RPC_TRANSPORT: 'node' },
    }),
    startTestRpc({
      db: testDb.client,
      schema: testDb.schema('rpc_uws'),
      upstreams: [anvil.url],
      env: { ...SHARED, RPC_TRANSPORT: 'uws' },
    }),
  ]);
}, 120_000);
afterAll(async () => {
  await Promise.allSettled([onNode?.stop(), onUws?.stop()]);
  await testDb?.close();
  await anvil?.stop();
});

interface Seen {
  status: number;
  body: string;
  headers: Record<string, string | null>;
}

const READ_HEADERS = [
  'content-type',
  'access-control-allow-origin',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
  'vary',
  'retry-after',
];

async function seen(base: string, path: string, init: RequestInit = {}): Promise<Seen> {
  const res = await fetch(`${base}${path}`, init);
  const body = await res.text();
  return { status: res.status, body, headers: Object.fromEntries(READ_HEADERS.map((h) => [h, res.headers.get(h)])) };
}

/** A raw HTTP/1.1 exchange: what was answered (status line on), after `send` wrote its bytes. */
function raw(url: string, send: (write: (chunk: string) => void) => Promise<void>): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    socket.on('data', (d) => (answer += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(answer));
    socket.on('connect', () => {
      send((chunk) => {
        if (!socket.destroyed) socket.write(chunk);
      }).then(
        () => setTimeout(() => socket.destroy(), 3_000),
        () => socket.destroy(),
      );
    });
  });
}

describe.runIf(uws.ok)(`RPC_TRANSPORT=uws${uws.ok ? '' : ` (cannot run here: ${uws.why})`}`, () => {
  it('behavior: answers every kind of request as the node:http endpoint does (status, body, content type, CORS)', async () => {
    const json = { 'content-type': 'application/json' };
    const cases: [string, string, RequestInit][] = [
      [
        'single call',
        '/',
        { method: 'POST', headers: json, body: '{"jsonrpc":"2.0","id":7,"method":"eth_chainId","params":[]}' },
      ],
      [
        'batch',
        '/',
        {
          method: 'POST',
          headers: json,
          body: '[{"jsonrpc":"2.0","id":"a","method":"eth_chainId","params":[]},{"jsonrpc":"2.0","id":2,"method":"nope_x","params":[]}]',
        },
      ],
      [
        'notification only',
        '/',
        { method: 'POST', headers: json, body: '{"jsonrpc":"2.0","method":"eth_chainId","params":[]}' },
      ],
      ['malformed JSON', '/', { method: 'POST', headers: json, body: '{"jsonrpc":' }],
      [
        'wrong params',
        '/',
        { method: 'POST', headers: json, body: '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x12"]}' },
      ],
      [
        'text/plain body',
        '/',
        {
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
          body: '{"jsonrpc":"2.0","id":1,"method":"net_version","params":[]}',
        },
      ],
      [
        'query string',
        '/?x=1',
        { method: 'POST', headers: json, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' },
      ],
      [
        'over RPC_MAX_BODY_BYTES (declared)',
        '/',
        {
          method: 'POST',
          headers: json,
          body: `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":["${'a'.repeat(1_100_000)}"]}`,
        },
      ],
      [
        'unknown API key',
        '/v1/l2k_nope',
        { method: 'POST', headers: json, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' },
      ],
      [
        'malformed API key',
        '/v1/%ZZ',
        { method: 'POST', headers: json, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' },
      ],
      ['GET /', '/', {}],
      ['GET unknown path', '/nope', {}],
      ['POST unknown path', '/nope', { method: 'POST', body: '{}' }],
      [
        'CORS preflight',
        '/',
        { method: 'OPTIONS', headers: { origin: 'https://dapp.example', 'access-control-request-method': 'POST' } },
      ],
      [
        'CORS on a call',
        '/',
        {
          method: 'POST',
          headers: { ...json, origin: 'https://dapp.example' },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
        },
      ],
      ['liveness', '/health/live', {}],
      ['readiness', '/health/ready', {}],
    ];
    for (const [name, path, init] of cases) {
      const [a, b] = await Promise.all([seen(onNode.url, path, init), seen(onUws.url, path, init)]);
      expect(b, name).toEqual(a);
    }
    const metrics = await fetch(`${onUws.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/l2stack_rpc_http_requests_total\{status="413"\} 1/);
  });

  it('error: a body over RPC_MAX_BODY_BYTES sent without a length (chunked) is 413 naming the limit', async () => {
    const body = `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":["${'a'.repeat(1_100_000)}"]}`;
    const stream = new ReadableStream({
      start(c) {
        for (let i = 0; i < body.length; i += 65_536) c.enqueue(new TextEncoder().encode(body.slice(i, i + 65_536)));
        c.close();
      },
    });
    const res = await fetch(onUws.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect((await res.json()) as unknown).toMatchObject({
      error: { code: -32600, message: expect.stringContaining('RPC_MAX_BODY_BYTES') },
    });
    // The endpoint goes on serving.
    expect(
      JSON.parse((await post(onUws.url, '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}')).text).result,
    ).toBe('0x539');
  });

  it('error: a body trickled past HTTP_REQUEST_TIMEOUT_MS is cut with 408 naming it', async () => {
    const body = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}'.padEnd(400, ' ');
    const began = Date.now();
    const answer = await raw(onUws.url, async (write) => {
      write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      for (const ch of body.slice(0, 40)) {
        write(ch);
        await new Promise((r) => setTimeout(r, 100));
      }
    });
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    expect(answer).toContain('HTTP_REQUEST_TIMEOUT_MS');
    expect(Date.now() - began).toBeLessThan(6_000);
  });

  it('behavior: WebSocket calls and subscriptions on the same port; past RPC_WS_MAX_SOCKETS an upgrade is 503 naming it', async () => {
    const wsUrl = onUws.url.replace('http://', 'ws://');
    const ws = new WebSocket(wsUrl);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const messages: {
      id?: number;
      result?: unknown;
      method?: string;
      params?: { subscription: string; result: { number: string } };
    }[] = [];
    ws.on('message', (d) => messages.push(JSON.parse(d.toString()) as never));
    ws.send('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}');
    ws.send('{"jsonrpc":"2.0","id":2,"method":"eth_subscribe","params":["newHeads"]}');
    await expect.poll(() => messages.filter((m) => m.id !== undefined).length, { timeout: 10_000 }).toBe(2);
    expect(messages.find((m) => m.id === 1)?.result).toBe('0x539');
    const sub = messages.find((m) => m.id === 2)?.result as string;
    expect(sub).toMatch(/^0x[0-9a-f]+$/);
    await provider.send('evm_mine', []);
    await expect
      .poll(() => messages.some((m) => m.method === 'eth_subscription' && m.params?.subscription === sub), {
        timeout: 10_000,
      })
      .toBe(true);

    const more = [new WebSocket(wsUrl), new WebSocket(wsUrl)];
    await Promise.all(more.map((w) => new Promise((resolve, reject) => w.once('open', resolve).once('error', reject))));
    const refused = await new Promise<{ status?: number; body: string }>((resolve) => {
      const w = new WebSocket(wsUrl);
      w.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      });
      w.on('error', () => undefined);
    });
    expect(refused.status).toBe(503);
    expect(refused.body).toContain('RPC_WS_MAX_SOCKETS');
    for (const w of [ws, ...more]) w.close();
  });

  it('error: messages piling up beyond RPC_WS_MAX_INFLIGHT calls in flight are held up to RPC_WS_MAX_BUFFERED_BYTES, then the socket is cut with 1008 naming it', async () => {
    // uWS cannot stop reading one socket (transport/uws/ws.ts): what waits is held and bounded instead.
    await expect
      .poll(
        async () =>
          (await fetch(`${onUws.url}/metrics`).then((r) => r.text())).match(/l2stack_rpc_ws_sockets (\d+)/)?.[1],
        { timeout: 10_000 },
      )
      .toBe('0');
    const ws = new WebSocket(onUws.url.replace('http://', 'ws://'));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    // Each call asks for an address nobody asked for, so none is answered from the cache: an answer from memory is
    // given before the next message is read and nothing would pile up (the same address warmed by an earlier
    // test made this hang until the test's timeout).
    const call = (i: number) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: i,
        method: 'eth_getBalance',
        params: [`0x${randomBytes(20).toString('hex')}`, 'latest'],
      }).padEnd(2_048, ' ');
    for (let i = 0; i < 100; i++) ws.send(call(i));
    const { code, reason } = await within('the socket cut after 100 calls of 2 KB', 20_000, closed);
    expect(code).toBe(1008);
    expect(reason).toContain('RPC_WS_MAX_BUFFERED_BYTES');
  });
});
