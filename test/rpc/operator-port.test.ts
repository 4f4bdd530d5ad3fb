import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Anvil } from '../../src/devnet/anvil.js';
import { loadRpcConfig, startRpc, type RunningRpc } from '../../src/rpc/index.js';
import { testCommon } from '../helpers/common.js';
import { openTestDb } from '../helpers/db.js';
import { chain } from './helpers.js';

/**
 * The endpoint's operator surface (issue 23, item 9): /metrics and /health/* on RPC_OPERATOR_PORT and off
 * the public port, a public readiness body that names no host, and CORS as RPC_CORS_ORIGINS says, on the
 * JSON-RPC route only.
 */
let anvil: Anvil;
let testDb: Awaited<ReturnType<typeof openTestDb>>;
const running: RunningRpc[] = [];
// Nothing listens here: a second upstream that is down, whose error names its host and port.
const DEAD_UPSTREAM = 'http://127.0.0.1:9/';

beforeAll(async () => {
  ({ anvil } = await chain());
  testDb = await openTestDb();
}, 120_000);
afterAll(async () => {
  for (const r of running) await r.stop();
  await testDb?.close();
  await anvil?.stop();
});

async function start(env: Record<string, string>): Promise<RunningRpc> {
  const config = loadRpcConfig(
    {
      RPC_PORT: '0',
      RPC_UPSTREAM_URLS: `${anvil.url},${DEAD_UPSTREAM}`,
      RPC_RATE_LIMIT_PER_SECOND: '0',
      RPC_UPSTREAM_HEAD_POLL_MS: '100',
      RPC_HEAD_SOURCE: 'poll',
      ...env,
    },
    { dbSchema: testDb.schema('rpc') },
  );
  const r = await startRpc({ common: testCommon(), db: testDb.client, config });
  running.push(r);
  return r;
}

const CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] });
const post = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: CALL });
const anvilHostPort = () => new URL(anvil.url).host;
/** Readiness once both upstreams have been probed (every 100 ms here): one healthy at a head, the other down. */
async function probed(url: string): Promise<void> {
  const text = async () => await (await fetch(`${url}/health/ready`)).text();
  await expect.poll(text, { timeout: 10_000, interval: 50 }).toMatch(/healthy at head \d+.*down/);
}

describe('operator port, readiness and CORS', () => {
  it('behavior: with RPC_OPERATOR_PORT the operator routes are on 127.0.0.1 only there, with full detail and no CORS; the public port answers 404 for them', async () => {
    const rpc = await start({ RPC_OPERATOR_PORT: '0' });
    expect(rpc.operatorUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(rpc.operatorUrl).not.toBe(rpc.url);
    const origin = { origin: 'https://evil.example' };

    for (const path of ['/metrics', '/health/ready', '/health/live']) {
      const pub = await fetch(`${rpc.url}${path}`, { headers: origin });
      expect(pub.status, path).toBe(404);
      expect(await pub.text()).not.toMatch(/l2stack_|upstreams/);
      const op = await fetch(`${rpc.operatorUrl}${path}`, { headers: origin });
      expect(op.headers.get('access-control-allow-origin'), path).toBeNull();
      if (path !== '/health/ready') expect(op.status, path).toBe(200);
    }
    // The operator sees which node is which (one is down): full detail, URLs included.
    await probed(rpc.operatorUrl!);
    const ready = await (await fetch(`${rpc.operatorUrl}/health/ready`)).text();
    expect(ready).toContain(anvilHostPort());
    expect(ready).toContain('127.0.0.1:9');
    expect(await (await fetch(`${rpc.operatorUrl}/metrics`)).text()).toContain('l2stack_rpc_http_requests_total');
    // JSON-RPC is not served on the operator port.
    expect((await post(rpc.operatorUrl!)).status).toBe(404);
    expect((await (await post(rpc.url)).json()) as unknown).toMatchObject({ result: '0x539' });
  }, 60_000);

  it('behavior: without an operator port the public readiness body numbers the upstreams and names no host, even of the one that is down', async () => {
    const rpc = await start({});
    expect(rpc.operatorUrl).toBeUndefined();
    await probed(rpc.url);
    const res = await fetch(`${rpc.url}/health/ready`, { headers: { origin: 'https://app.example' } });
    const text = await res.text();
    const body = JSON.parse(text) as { checks: { name: string; ok: boolean; detail?: string }[] };
    expect(body.checks.find((c) => c.name === 'upstreams')).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/^upstream 1 healthy at head \d+; upstream 2 down$/),
    });
    expect(text).not.toContain(anvilHostPort());
    expect(text).not.toMatch(/127\.0\.0\.1|http:|:9\b/);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(
      (await fetch(`${rpc.url}/metrics`, { headers: { origin: 'https://app.example' } })).headers.get(
        'access-control-allow-origin',
      ),
    ).toBeNull();
  }, 60_000);

  it('behavior: RPC_CORS_ORIGINS "*" (default) allows any page, a list echoes only a listed origin with Vary, "none" sends no CORS header', async () => {
    const open = await start({});
    const simple = await post(open.url, { origin: 'https://any.example' });
    expect(simple.headers.get('access-control-allow-origin')).toBe('*');
    const preflight = await fetch(open.url, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://any.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('content-type');
    // A refused key is an answer a page must be able to read, like any other.
    expect(
      (await post(`${open.url}/v1/%ZZ`, { origin: 'https://any.example' })).headers.get('access-control-allow-origin'),
    ).toBe('*');

    const listed = await start({ RPC_CORS_ORIGINS: 'https://app.example.org, http://localhost:5173' });
    const ok = await post(listed.url, { origin: 'https://app.example.org' });
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example.org');
    expect(ok.headers.get('vary')).toBe('Origin');
    const other = await post(listed.url, { origin: 'https://evil.example' });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(other.headers.get('vary')).toBe('Origin');
    // served; the browser keeps it from the page
    expect(((await other.json()) as { result: string }).result).toBe('0x539');
    const pfOk = await fetch(`${listed.url}/v1/abc`, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST' },
    });
    expect(pfOk.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(pfOk.headers.get('access-control-allow-methods')).toContain('POST');
    const pfBad = await fetch(listed.url, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(pfBad.status).toBe(204);
    expect(pfBad.headers.get('access-control-allow-origin')).toBeNull();
    expect(pfBad.headers.get('access-control-allow-methods')).toBeNull();

    const none = await start({ RPC_CORS_ORIGINS: 'none' });
    const plain = await post(none.url, { origin: 'https://app.example.org' });
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();
    expect(plain.headers.get('vary')).toBeNull();
  }, 60_000);

  it('error: RPC_CORS_ORIGINS that is not "*", "none" or a list of origins is refused at start, by name', () => {
    expect(() =>
      loadRpcConfig({ RPC_UPSTREAM_URLS: 'http://127.0.0.1:8545', RPC_CORS_ORIGINS: 'app.example.org' }),
    ).toThrow(/RPC_CORS_ORIGINS: expected "\*" \(any origin\), "none"/);
    expect(() =>
      loadRpcConfig({ RPC_UPSTREAM_URLS: 'http://127.0.0.1:8545', RPC_CORS_ORIGINS: 'https://a.example/path' }),
    ).toThrow(/RPC_CORS_ORIGINS/);
  });
});
