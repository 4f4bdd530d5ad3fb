import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { createReadiness } from '../../src/token-api/readiness.js';
import { openTestDb } from '../helpers/db.js';
import { startTestApi, type TestApi } from './helpers.js';

/**
 * Issue 18 item 7: /health/ready of the token API stayed 200 while its node was frozen for 55 s. The
 * node is frozen here for real (SIGSTOP on anvil: connections are accepted by the kernel, nothing answers).
 */

interface Ready {
  status: string;
  checks: { name: string; ok: boolean; detail?: string }[];
}

const check = (body: Ready, name: string) => body.checks.find((c) => c.name === name);

let anvil: Anvil;
let db: Awaited<ReturnType<typeof openTestDb>>;
let t: TestApi;

beforeAll(async () => {
  anvil = await startAnvil({ port: 0, chainId: 31_337 });
  db = await openTestDb();
  t = await startTestApi({ rpcUrl: anvil.url, readiness: { timeoutMs: 500, maxStallMs: 60_000 } }, db);
});

afterAll(async () => {
  anvil?.process.kill('SIGCONT');
  await t?.close();
  await db?.close();
  await anvil?.stop();
});

const ready = async () => {
  const res = await fetch(`${t.url}/health/ready`);
  return { status: res.status, body: (await res.json()) as Ready };
};

describe('token API readiness', () => {
  it('behavior: 503 naming the node while it is frozen, 200 again when it answers', async () => {
    await expect.poll(async () => (await ready()).status, { timeout: 10_000 }).toBe(200);
    expect((await ready()).body).toMatchObject({
      status: 'ok',
      checks: expect.arrayContaining([
        { name: 'database', ok: true },
        { name: 'node', ok: true },
      ]),
    });

    anvil.process.kill('SIGSTOP');
    try {
      await expect.poll(async () => (await ready()).status, { timeout: 10_000, interval: 200 }).toBe(503);
      const { body } = await ready();
      expect(body.status).toBe('unavailable');
      expect(check(body, 'database')).toEqual({ name: 'database', ok: true });
      expect(check(body, 'node')?.ok).toBe(false);
      expect(check(body, 'node')?.detail).toMatch(
        /^eth_blockNumber on http:\/\/127\.0\.0\.1:\d+ did not answer within 500 ms$/,
      );
    } finally {
      anvil.process.kill('SIGCONT');
    }
    await expect.poll(async () => (await ready()).status, { timeout: 10_000, interval: 200 }).toBe(200);
  });

  it('behavior: a database that does not answer makes it 503 naming the database', async () => {
    const probe = createReadiness({
      pingDatabase: () => new Promise(() => undefined),
      rpcUrl: undefined,
      timeoutMs: 200,
      maxStallMs: 60_000,
      indexer: undefined,
      supply: undefined,
    });
    const report = await probe();
    expect(report.ready).toBe(false);
    expect(report.failing).toEqual(['database: the database did not answer within 200 ms']);
  });

  it('behavior: an indexer or supply job without progress past the stall bound is not ready', async () => {
    const longAgo = Date.now() - 120_000;
    const probe = createReadiness({
      pingDatabase: async () => undefined,
      rpcUrl: undefined,
      timeoutMs: 200,
      maxStallMs: 60_000,
      indexer: () => ({ state: 'running', lastProgressAt: longAgo }),
      supply: { lastUpdatedAt: () => longAgo, intervalMs: 30_000 },
    });
    const report = await probe();
    expect(report.ready).toBe(false);
    expect(report.failing).toEqual(['indexer: no progress for 120 s', 'supply: last computed 120 s ago']);

    const standby = createReadiness({
      pingDatabase: async () => undefined,
      rpcUrl: undefined,
      timeoutMs: 200,
      maxStallMs: 60_000,
      indexer: () => ({ state: 'standing by', lastProgressAt: undefined }),
      supply: undefined,
    });
    expect((await standby()).ready).toBe(true);
    expect((await standby()).checks).toEqual(
      expect.arrayContaining([
        { name: 'indexer', ok: true, detail: 'standing by' },
        { name: 'supply', ok: true, detail: 'not configured' },
      ]),
    );
  });
});
