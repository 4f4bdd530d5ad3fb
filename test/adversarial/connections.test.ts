import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_HTTP_LIMITS } from '../../src/common/config/http-env.js';
import type { RunningServer } from '../../src/common/http/server.js';
import { startTestApi, type TestApi } from '../token-api/helpers.js';
import { startCanary, type Canary } from './canary.js';
import { freshRequest, idleFlood as flood } from './flood.js';
import { blockNumberCanary, chain, openTestDb, startRpcUnderTest, type RpcUnderTest } from './rpc-harness.js';
import { startRelayerApi } from './servers.js';
import { onUws } from '../helpers/transport.js';

/**
 * Issue 18 item 4: 20,000 idle sockets made all three services unreachable (EMFILE), and a trickled body
 * was held for 310 s. With HTTP_MAX_CONNECTIONS lowered to 200, 1,000 idle sockets are opened against
 * each server: the excess is closed at the door, a new client is refused while the flood lasts, and a
 * client connected before the flood keeps being served (canary, p99 printed). A request trickled byte by
 * byte is cut at the request timeout.
 */

const LIMIT = 200;
const FLOOD = 1_000;
const limits = { ...DEFAULT_HTTP_LIMITS, maxConnections: LIMIT, maxConnectionsPerClient: 0 };

let db: Awaited<ReturnType<typeof openTestDb>>;
let anvil: Awaited<ReturnType<typeof chain>>['anvil'];
let token: TestApi;
let rpc: RpcUnderTest;
let rpcTrickle: RpcUnderTest;
let relayer: RunningServer;

beforeAll(async () => {
  db = await openTestDb();
  anvil = (await chain()).anvil;
  const limitEnv = { HTTP_MAX_CONNECTIONS: String(LIMIT), HTTP_MAX_CONNECTIONS_PER_CLIENT: '0' };
  [token, rpc, rpcTrickle, relayer] = await Promise.all([
    startTestApi({ http: limits }, db, { validateResponses: false }),
    startRpcUnderTest({ db, schema: db.schema('rpc_flood'), anvil, env: limitEnv }),
    startRpcUnderTest({
      db,
      schema: db.schema('rpc_trickle'),
      anvil,
      env: { HTTP_REQUEST_TIMEOUT_MS: '2000', HTTP_HEADERS_TIMEOUT_MS: '2000' },
    }),
    startRelayerApi({ db, limits }),
  ]);
});

afterAll(async () => {
  await Promise.allSettled([token?.close(), rpc?.stop(), rpcTrickle?.stop(), relayer?.close()]);
  await anvil?.stop();
  await db?.close();
});

async function underFlood(
  name: string,
  url: string,
  canary: Canary,
  probe: () => Promise<number | string>,
): Promise<void> {
  await canary.served(); // its keep-alive socket is open before the flood
  const f = await flood(url, FLOOD);
  try {
    // The server closes the excess as it accepts it; wait until it has (bounded by the test timeout).
    await expect.poll(() => f.open(), { timeout: 15_000, interval: 100 }).toBeLessThanOrEqual(LIMIT);
    expect(f.open(), `${name}: the flood holds the slots the canary leaves`).toBeGreaterThan(LIMIT / 2);
    expect(typeof (await probe()), `${name}: a new client is refused while the limit is reached`).toBe('string');
    await new Promise((r) => setTimeout(r, 1_000)); // the canary keeps going while the flood is held
  } finally {
    f.release();
  }
  const report = await canary.stop();
  expect(report.failed, `${name}: ${report.failures.join(' | ')}`).toBe(0);
  expect(report.sent).toBeGreaterThan(5);
  await expect.poll(probe, { timeout: 10_000, interval: 200 }).toBe(200);
}

describe('connection limits', () => {
  it('behavior: token API — 1,000 idle sockets over a limit of 200: excess refused, canary served', async () => {
    const canary = startCanary('token-api', { url: `${token.url}/tokens?limit=1` });
    await underFlood('token-api', token.url, canary, () => freshRequest(`${token.url}/health/live`));
  });

  it(`behavior: RPC endpoint${onUws ? ' on uWS' : ''} — 1,000 idle sockets over a limit of 200: excess refused, canary served`, async () => {
    expect(rpc.config.http?.maxConnections).toBe(LIMIT);
    const body = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';
    await underFlood('rpc', rpc.url, blockNumberCanary('rpc', rpc.url), () =>
      freshRequest(rpc.url, { method: 'POST', body, headers: { 'content-type': 'application/json' } }),
    );
    // The refusal is told to the operator, naming the variable, on either stack.
    expect(rpc.logs.some((l) => l.level === 40 && l.msg.includes('(HTTP_MAX_CONNECTIONS)'))).toBe(true);
  });

  it('behavior: relayer API — 1,000 idle sockets over a limit of 200: excess refused, canary served', async () => {
    const canary = startCanary('relayer-api', { url: `${relayer.url}/messages?limit=1` });
    await underFlood('relayer-api', relayer.url, canary, () => freshRequest(`${relayer.url}/health/live`));
  });
});

/** Sends `head`, then `drip` one byte every 100 ms; resolves with what the server answered when it closed. */
function trickle(url: string, head: string, drip: string): Promise<{ answer: string; dripped: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const s = connect(Number(port), hostname);
    let answer = '';
    let dripped = 0;
    let timer: NodeJS.Timeout | undefined;
    s.on('error', () => undefined);
    s.on('data', (d: Buffer) => (answer += d.toString()));
    s.once('connect', () => {
      s.write(head);
      timer = setInterval(() => {
        if (dripped < drip.length && s.writable) s.write(drip[dripped++]!);
      }, 100);
    });
    s.once('close', () => {
      clearInterval(timer);
      resolve({ answer, dripped });
    });
  });
}

describe('request timeouts (HTTP_REQUEST_TIMEOUT_MS=2000)', () => {
  it('behavior: a trickled body is cut with 408 long before it is complete', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }).padEnd(600, ' ');
    const head = `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const { answer, dripped } = await trickle(rpcTrickle.url, head, body);
    expect(answer === '' || answer.startsWith('HTTP/1.1 408'), answer.slice(0, 100)).toBe(true);
    expect(dripped).toBeLessThan(body.length);
    process.stdout.write(
      `trickled body: cut after ${dripped} of ${body.length} bytes with ${answer.split('\r\n')[0] || 'a closed socket'}\n`,
    );
  });

  it('behavior: trickled headers are cut too', async () => {
    const headers = `Host: x\r\n${'X-Slow: a\r\n'.repeat(40)}\r\n`;
    const { answer, dripped } = await trickle(rpcTrickle.url, 'GET /health/live HTTP/1.1\r\n', headers);
    expect(answer === '' || answer.startsWith('HTTP/1.1 408'), answer.slice(0, 100)).toBe(true);
    expect(dripped).toBeLessThan(headers.length);
  });
});
