import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Anvil } from '../../src/devnet/anvil.js';
import { ApiKeyStore } from '../../src/rpc/keys/store.js';
import { openTestDb } from '../helpers/db.js';
import { chain, post, startTestRpc } from './helpers.js';

/**
 * The private tier over real sockets: a key in the path or the x-api-key header gets its own limit and
 * allow-list; anonymous callers keep the public limit; unknown and revoked keys are refused with 401.
 */
let anvil: Anvil;
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let store: ApiKeyStore;

beforeAll(async () => {
  ({ anvil } = await chain());
  testDb = await openTestDb();
  const schema = testDb.schema('rpc');
  // The public tier: 1 unit per second, burst 2 — a keyed client must not be held to it.
  rpc = await startTestRpc({
    db: testDb.client,
    schema,
    upstreams: [anvil.url],
    env: { RPC_RATE_LIMIT_PER_SECOND: '1', RPC_RATE_LIMIT_BURST: '20' },
  });
  store = new ApiKeyStore(testDb.client, schema);
}, 120_000);
afterAll(async () => {
  await rpc?.stop();
  await testDb?.close();
  await anvil?.stop();
});

const body = (method: string, id = 1) => JSON.stringify({ jsonrpc: '2.0', id, method, params: [] });

describe('API keys at the endpoint', () => {
  it('behavior: a key gets its own limit and allow-list by path or header, while anonymous calls hit the public limit', async () => {
    const { key } = await store.create('fast-reader', {
      ratePerSecond: 10_000,
      burst: 10_000,
      methods: ['eth_blockNumber', 'eth_chainId'],
    });
    // The public burst (20) in one batch, then the same again: refused unless 20 s went by, whatever the load.
    const calls = (n: number) => `[${Array.from({ length: n }, (_, i) => body('eth_chainId', i)).join(',')}]`;
    expect((await post(rpc.url, calls(20))).status).toBe(200);
    expect((await post(rpc.url, calls(20))).status).toBe(429);

    for (let i = 0; i < 50; i++) {
      const r = await post(`${rpc.url}/v1/${key}`, body('eth_blockNumber', i));
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text).result).toMatch(/^0x/);
    }
    const viaHeader = await post(rpc.url, body('eth_chainId'), { 'x-api-key': key });
    expect(JSON.parse(viaHeader.text).result).toBe('0x539');

    const batch = await post(
      `${rpc.url}/v1/${key}`,
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] },
        { jsonrpc: '2.0', id: 2, method: 'eth_getBalance', params: ['0x' + '00'.repeat(20), 'latest'] },
      ]),
    );
    const [ok, refused] = JSON.parse(batch.text) as { result?: string; error?: { code: number; message: string } }[];
    expect(ok!.result).toBe('0x539');
    expect(refused!.error).toMatchObject({ code: -32601, message: expect.stringContaining('not allowed for API key') });
  }, 60_000);

  it('error: unknown keys are 401 naming the problem; a revoked key is refused within a second, over HTTP and WebSocket', async () => {
    const unknown = await post(`${rpc.url}/v1/l2s_${'A'.repeat(43)}`, body('eth_chainId'));
    expect(unknown.status).toBe(401);
    expect(JSON.parse(unknown.text).error.message).toContain('unknown API key');

    const { key, record } = await store.create('short-lived');
    expect((await post(`${rpc.url}/v1/${key}`, body('eth_chainId'))).status).toBe(200);
    const wsOk = new WebSocket(`${rpc.url.replace('http', 'ws')}/v1/${key}`);
    await new Promise<void>((resolve, reject) => {
      wsOk.once('open', () => resolve());
      wsOk.once('error', reject);
    });
    const answer = await new Promise<string>((resolve) => {
      wsOk.once('message', (d) => resolve(d.toString()));
      wsOk.send(body('eth_chainId'));
    });
    expect(JSON.parse(answer).result).toBe('0x539');
    wsOk.close();

    await store.revoke(record.id);
    await new Promise((r) => setTimeout(r, 1_000));
    const revoked = await post(`${rpc.url}/v1/${key}`, body('eth_chainId'));
    expect(revoked.status).toBe(401);
    expect(JSON.parse(revoked.text).error.message).toContain(`API key ${record.id} (short-lived) was revoked`);
    const wsRefused = new WebSocket(`${rpc.url.replace('http', 'ws')}/v1/${key}`);
    const status = await new Promise<number>((resolve) =>
      wsRefused.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)),
    );
    expect(status).toBe(401);
  }, 60_000);
});
