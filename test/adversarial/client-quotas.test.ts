import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_HTTP_LIMITS } from '../../src/common/config/http-env.js';
import type { RunningServer } from '../../src/common/http/server.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { forwardTo } from '../rpc/helpers.js';
import { onUws } from '../helpers/transport.js';
import { startTestApi, type TestApi } from '../token-api/helpers.js';
import { startCanary, type Canary } from './canary.js';
import { freshRequest, idleFlood } from './flood.js';
import { chain, nodeCanary, openTestDb, startRpcUnderTest, type RpcUnderTest } from './rpc-harness.js';
import { startRelayerApi } from './servers.js';
import { metric, wsClient, type WsClient } from './ws-harness.js';

/**
 * Issue 35 items 1-3: one anonymous address took every shared slot (2,048 WebSocket sockets, 4,096 TCP
 * connections) and every other client was refused. The quotas are set low here; the attacker is 127.0.0.1 and
 * every canary 127.0.0.2 (Linux routes all of 127/8 to loopback, and the endpoint names a client by its socket
 * address, as its rate limit does), so the attacker holding its whole quota must leave the canary served.
 */
const ATTACKER = '127.0.0.1';
const CANARY = '127.0.0.2';
const WS_PER_CLIENT = 8;
const TCP_PER_CLIENT = 20;
const INFLIGHT_PER_CLIENT = 3;
const limits = { ...DEFAULT_HTTP_LIMITS, maxConnectionsPerClient: TCP_PER_CLIENT };

/**
 * A node in front of anvil that holds every eth_call until `release()`: the attacker's calls stay in flight for
 * as long as the test needs, whatever the machine's speed. eth_call goes upstream alone (evm-bounds.ts), so no
 * other call waits with it.
 */
async function gatedNode(targetUrl: string) {
  const target = new URL(targetUrl);
  const held: (() => void)[] = [];
  let open = true;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const forward = () => forwardTo(target, body, res);
      if (open || !body.toString().includes('"eth_call"')) return forward();
      held.push(forward);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => held.length,
    hold: () => void (open = false),
    release: () => {
      open = true;
      held.splice(0).forEach((f) => f());
    },
    close: () => new Promise<void>((r) => (server.close(() => r()), server.closeAllConnections())),
  };
}

let anvil: Anvil;
let db: Awaited<ReturnType<typeof openTestDb>>;
let gate: Awaited<ReturnType<typeof gatedNode>>;
let rpc: RpcUnderTest;
let token: TestApi;
let relayer: RunningServer;
let wsUrl: string;

beforeAll(async () => {
  ({ anvil } = await chain());
  db = await openTestDb();
  gate = await gatedNode(anvil.url);
  const env = {
    RPC_UPSTREAM_URLS: gate.url,
    RPC_WS_MAX_SOCKETS_PER_CLIENT: String(WS_PER_CLIENT),
    RPC_WS_IDLE_TIMEOUT_MS: '1500',
    HTTP_MAX_CONNECTIONS_PER_CLIENT: String(TCP_PER_CLIENT),
    RPC_MAX_INFLIGHT_PER_CLIENT: String(INFLIGHT_PER_CLIENT),
    RPC_EVM_TIMEOUT_MS: '60000',
  };
  [rpc, token, relayer] = await Promise.all([
    startRpcUnderTest({ db, schema: db.schema('rpc_quotas'), anvil, env }),
    startTestApi({ http: limits }, db, { validateResponses: false }),
    startRelayerApi({ db, limits }),
  ]);
  wsUrl = rpc.url.replace('http://', 'ws://');
}, 120_000);

afterAll(async () => {
  gate?.release();
  await Promise.allSettled([rpc?.stop(), token?.close(), relayer?.close()]);
  await gate?.close();
  await anvil?.stop();
  await db?.close();
});

/** One upgrade: the open socket, or the HTTP status and body it was refused with. */
function tryUpgrade(url: string, localAddress: string): Promise<{ ws: WebSocket } | { status: number; body: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { localAddress });
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on('error', (err) => resolve({ status: 0, body: err.message }));
  });
}

const expectServed = async (canary: Canary) => {
  const report = await canary.stop();
  expect(report.failed, `${report.name}: ${report.failures.join(' | ')}`).toBe(0);
  expect(report.sent).toBeGreaterThan(5);
};

describe('per-client quotas on the RPC endpoint', () => {
  // 18 at once: under the address's TCP quota (20), so every refusal is the WebSocket quota's own answer.
  it(`behavior: one address opens 18 WebSocket sockets, each subscribed to newHeads: ${WS_PER_CLIENT} are held, the rest get 429 naming RPC_WS_MAX_SOCKETS_PER_CLIENT; another address still connects and its canary is served`, async () => {
    const canary = nodeCanary('ws-quota', rpc.url, { localAddress: CANARY });
    const tries = await Promise.all(Array.from({ length: 18 }, () => tryUpgrade(wsUrl, ATTACKER)));
    const held = tries.flatMap((t) => ('ws' in t ? [t.ws] : []));
    const refused = tries.flatMap((t) => ('status' in t ? [t] : []));
    try {
      for (const ws of held) ws.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}');
      expect(held.length).toBe(WS_PER_CLIENT);
      expect(new Set(refused.map((r) => r.status))).toEqual(new Set([429]));
      expect(JSON.parse(refused[0]!.body)).toEqual({
        error: expect.stringContaining(`at most ${WS_PER_CLIENT} (RPC_WS_MAX_SOCKETS_PER_CLIENT)`),
      });
      expect(await metric(rpc.url, 'l2stack_rpc_ws_refused_total', 'reason="client_sockets"')).toBeGreaterThanOrEqual(
        18 - WS_PER_CLIENT,
      );
      // The other address: admitted and answered over its socket while the attacker holds its whole quota.
      const other = await wsClient(wsUrl, undefined, CANARY);
      expect((await other.call('eth_chainId')).result).toBe('0x539');
      await other.close();
      await new Promise((r) => setTimeout(r, 1_000)); // the canary keeps going while the sockets are held
    } finally {
      held.forEach((ws) => ws.terminate());
    }
    await expectServed(canary);
    // The attacker's slots are given back with its sockets.
    await expect
      .poll(
        async () => {
          const t = await tryUpgrade(wsUrl, ATTACKER);
          if ('ws' in t) t.ws.terminate();
          return 'ws' in t;
        },
        { timeout: 15_000, interval: 200 },
      )
      .toBe(true);
  });

  it('behavior: a socket with no subscription is closed with 1000 naming RPC_WS_IDLE_TIMEOUT_MS; a subscribed one stays open', async () => {
    const idle = await wsClient(wsUrl, undefined, CANARY);
    const subscribed = await wsClient(wsUrl, undefined, CANARY);
    expect(typeof (await subscribed.call('eth_subscribe', ['newHeads'])).result).toBe('string');
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      idle.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    const { code, reason } = await closed;
    expect(code).toBe(1000);
    expect(reason).toContain('RPC_WS_IDLE_TIMEOUT_MS');
    expect(subscribed.ws.readyState).toBe(WebSocket.OPEN);
    await subscribed.close();
  });

  it(`behavior: one address keeps ${INFLIGHT_PER_CLIENT} slow calls at the node; its next calls (HTTP and WebSocket) get 429 / -32005 naming RPC_MAX_INFLIGHT_PER_CLIENT; another address is served; released, the held calls are answered`, async () => {
    gate.hold();
    const call = (i: number) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: i,
        method: 'eth_call',
        params: [{ to: `0x${(0x1000 + i).toString(16).padStart(40, '0')}`, data: '0x' }, 'latest'],
      });
    const sent = Array.from({ length: 6 }, (_, i) => postFrom(rpc.url, call(i), ATTACKER));
    let attackerWs: WsClient | undefined;
    let canary: Canary | undefined;
    try {
      await expect.poll(() => gate.held(), { timeout: 20_000, interval: 50 }).toBe(INFLIGHT_PER_CLIENT);
      canary = nodeCanary('inflight-quota', rpc.url, { localAddress: CANARY });
      attackerWs = await wsClient(wsUrl, undefined, ATTACKER);
      const overWs = await attackerWs.call('eth_call', [{ to: `0x${'22'.repeat(20)}`, data: '0x' }, 'latest']);
      expect(overWs.error).toMatchObject({
        code: -32005,
        data: { cap: 'RPC_MAX_INFLIGHT_PER_CLIENT', limit: INFLIGHT_PER_CLIENT },
      });
      // A batch while the quota is full: one -32005 per call.
      const batch = await postFrom(rpc.url, `[${chainIds(2)}]`, ATTACKER);
      expect(batch.status).toBe(429);
      expect((JSON.parse(batch.body) as { error: { code: number } }[]).map((a) => a.error.code)).toEqual([
        -32005, -32005,
      ]);
      await new Promise((r) => setTimeout(r, 1_000)); // the canary keeps going while the calls are held
      expect(gate.held()).toBe(INFLIGHT_PER_CLIENT);
    } finally {
      gate.release();
    }
    const answers = await Promise.all(sent);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(INFLIGHT_PER_CLIENT);
    const over = answers.filter((a) => a.status === 429);
    expect(over).toHaveLength(6 - INFLIGHT_PER_CLIENT);
    expect((JSON.parse(over[0]!.body) as { error: { message: string } }).error.message).toContain(
      `at most ${INFLIGHT_PER_CLIENT} of one client at once`,
    );
    await expectServed(canary!);
    // The slots came back: the attacker's next call is served, and a batch larger than the quota runs alone.
    expect((await attackerWs!.call('eth_chainId')).result).toBe('0x539');
    const batch = await postFrom(rpc.url, `[${chainIds(5)}]`, ATTACKER);
    expect(batch.status).toBe(200);
    expect((JSON.parse(batch.body) as { result: string }[]).map((a) => a.result)).toEqual(Array(5).fill('0x539'));
    await attackerWs!.close();
  });
  // uWS has no connection cap: a body being received counts as in flight there (on node the connection quota bounds
  // them).
  it.runIf(onUws)(
    `behavior: uws — one address keeps ${INFLIGHT_PER_CLIENT} bodies half-sent; its next request gets 429 naming RPC_MAX_INFLIGHT_PER_CLIENT; another address is served; closed, the slots come back`,
    async () => {
      const { hostname, port } = new URL(rpc.url);
      const canary = nodeCanary('uws-bodies', rpc.url, { localAddress: CANARY });
      const trickles = Array.from({ length: INFLIGHT_PER_CLIENT }, () => {
        const s = connect({ host: hostname, port: Number(port), localAddress: ATTACKER });
        s.on('error', () => undefined);
        s.write(
          `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"jsonrpc":"2.0",`,
        );
        return s;
      });
      try {
        await expect
          .poll(async () => (await postFrom(rpc.url, chainIds(1), ATTACKER)).status, { timeout: 15_000, interval: 100 })
          .toBe(429);
        const refused = await postFrom(rpc.url, chainIds(1), ATTACKER);
        expect(JSON.parse(refused.body)).toMatchObject({
          error: { code: -32005, data: { cap: 'RPC_MAX_INFLIGHT_PER_CLIENT', limit: INFLIGHT_PER_CLIENT } },
        });
        expect((await postFrom(rpc.url, chainIds(1), CANARY)).status).toBe(200);
        await new Promise((r) => setTimeout(r, 1_000)); // the canary keeps going while the bodies are held
      } finally {
        trickles.forEach((s) => s.destroy());
      }
      await expectServed(canary);
      await expect
        .poll(async () => (await postFrom(rpc.url, chainIds(1), ATTACKER)).status, { timeout: 15_000, interval: 100 })
        .toBe(200);
    },
  );
});

/** `n` eth_chainId calls, comma-separated (a batch's members). */
const chainIds = (n: number) =>
  Array.from({ length: n }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"eth_chainId"}`).join(',');

/** POST `body` from `localAddress` on a connection of its own. */
function postFrom(url: string, body: string, localAddress: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const r = request(
      url,
      { method: 'POST', agent: false, localAddress, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    r.on('error', reject);
    r.end(body);
  });
}

/**
 * One address opens 100 idle TCP connections: the server keeps its quota and closes the rest at accept, while a
 * canary from another address (its keep-alive socket opened first) and a brand-new client from it are served.
 */
async function holdsItsQuota(
  name: string,
  url: string,
  canary: Canary,
  probe: () => Promise<number | string>,
): Promise<void> {
  await canary.served(); // its keep-alive socket is open before the flood
  const flood = await idleFlood(url, 100, ATTACKER);
  try {
    await expect.poll(() => flood.open(), { timeout: 15_000, interval: 100 }).toBeLessThanOrEqual(TCP_PER_CLIENT);
    // Its quota, less any keep-alive socket this address already had open (the test's own /metrics reads).
    expect(flood.open(), `${name}: the attacker keeps its quota`).toBeGreaterThan(TCP_PER_CLIENT / 2);
    expect(
      await freshRequest(`${url}/health/live`, { localAddress: ATTACKER }),
      `${name}: the attacker's next connection is closed`,
    ).toEqual(expect.any(String));
    expect(await probe(), `${name}: a new client from another address is served`).toBe(200);
    await new Promise((r) => setTimeout(r, 1_000)); // the canary keeps going while the flood is held
  } finally {
    flood.release();
  }
  await expectServed(canary);
  await expect
    .poll(() => freshRequest(`${url}/health/live`, { localAddress: ATTACKER }), { timeout: 10_000, interval: 200 })
    .toBe(200);
}

describe(`per-client TCP connections (HTTP_MAX_CONNECTIONS_PER_CLIENT=${TCP_PER_CLIENT})`, () => {
  it(`behavior: RPC endpoint${onUws ? ' on uWS' : ''} — one address holds 20 of 100 idle connections, the rest closed at accept; another address is served`, async () => {
    const body = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';
    await holdsItsQuota('rpc', rpc.url, nodeCanary('rpc-tcp', rpc.url, { localAddress: CANARY }), () =>
      freshRequest(rpc.url, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
        localAddress: CANARY,
      }),
    );
    // The refusal is told to the operator, naming the variable (a closed connection carries no message).
    expect(rpc.logs.some((l) => l.level === 40 && l.msg.includes('(HTTP_MAX_CONNECTIONS_PER_CLIENT)'))).toBe(true);
  });

  it('behavior: token API — one address holds 20 of 100 idle connections, the rest closed at accept; another address is served', async () => {
    const canary = startCanary('token-api-tcp', { url: `${token.url}/tokens?limit=1`, localAddress: CANARY });
    await holdsItsQuota('token-api', token.url, canary, () =>
      freshRequest(`${token.url}/health/live`, { localAddress: CANARY }),
    );
  });

  it('behavior: relayer API — one address holds 20 of 100 idle connections, the rest closed at accept; another address is served', async () => {
    const canary = startCanary('relayer-api-tcp', { url: `${relayer.url}/messages?limit=1`, localAddress: CANARY });
    await holdsItsQuota('relayer-api', relayer.url, canary, () =>
      freshRequest(`${relayer.url}/health/live`, { localAddress: CANARY }),
    );
  });
});

describe('file descriptors', () => {
  it('behavior: the endpoint logs its descriptor limit and HTTP_FD_RESERVE at start, and exports them as metrics', async () => {
    const line = rpc.logs.find((l) => l.msg.startsWith('file descriptors:'));
    expect(line?.msg).toMatch(
      /^file descriptors: \d+ limit \(ulimit -n\), 1024 kept for our own database and chain connections \(HTTP_FD_RESERVE\), client connections of the process at most \d+/,
    );
    const limit = await metric(rpc.url, 'l2stack_fd_limit');
    expect(await metric(rpc.url, 'l2stack_fd_reserve')).toBe(1024);
    expect(await metric(rpc.url, 'l2stack_client_connections_max')).toBe(limit - 1024);
  });
});
