import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import {
  processDatabase,
  spawnRelayer,
  until,
  type ProcessDatabase,
  type RelayerProcess,
} from '../e2e/relayer/process.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { startCanary } from './canary.js';

/**
 * Issue 23 item 7: the database goes away under relayer API traffic. The `l2stack relayer` process reaches
 * PostgreSQL through a TCP proxy the test cuts for 6 s (connections reset, new ones refused, as when the server
 * goes down). The message routes must answer 503 problem+json naming the database (not 500) while it is gone and
 * 200 once it is back, liveness (the canary) stays 200, and every line the process prints is JSON (knex's own
 * "Acquire connection error" stacks used to go to stdout as plain text). PGlite lives inside the process: an
 * outage of it cannot be made from outside, so this runs on the PostgreSQL pass only.
 */
const onPostgres = process.env.DATABASE_HOST !== undefined;
if (!onPostgres)
  process.stdout.write(
    'relayer-db-outage: skipped on PGlite (the database is inside the process; no outage can be made from outside). Run with DATABASE_HOST.\n',
  );

let testDb: Awaited<ReturnType<typeof openTestDb>>;
let db: ProcessDatabase;
let proxy: TcpProxy;
let relayer: RelayerProcess | undefined;

beforeAll(async () => {
  if (!onPostgres) return;
  testDb = await openTestDb();
  db = await processDatabase(testDb, 'outage');
  const c = testDb.client.config as { host: string; port: number };
  proxy = await startTcpProxy({ host: c.host, port: c.port });
});
afterAll(async () => {
  if (relayer && relayer.child.exitCode === null) relayer.child.kill('SIGKILL');
  await proxy?.close();
  await db?.drop();
  await testDb?.close();
});

type Seen = { status: number; body: string; at: number };

/** `n` clients reading /messages back to back until stopped; every answer kept. */
function traffic(url: string, n: number): { stop(): Promise<Seen[]> } {
  const seen: Seen[] = [];
  let stopped = false;
  const loops = Array.from({ length: n }, async () => {
    while (!stopped) {
      const r = await fetch(`${url}/messages?limit=5`, { signal: AbortSignal.timeout(30_000) }).catch((err: Error) => ({
        status: 0,
        text: async () => err.message,
      }));
      seen.push({ status: r.status, body: await r.text(), at: Date.now() });
      await new Promise((r) => setTimeout(r, 50));
    }
  });
  return { stop: async () => ((stopped = true), await Promise.all(loops), seen) };
}

describe.skipIf(!onPostgres)('adversarial: PostgreSQL outage under relayer API traffic', () => {
  it(
    'behavior: 503 naming the database during the outage, 200 after, liveness served, every line JSON',
    { timeout: 90_000 },
    async () => {
      const key = devAccounts(3)[2]!.privateKey;
      relayer = await spawnRelayer({
        ...db.env,
        DATABASE_PORT: String(proxy.port),
        // No direction: the API alone, so every database error seen comes from its requests.
        L1_L2_AUTO_CLAIM_ENABLED: 'false',
        L2_L1_AUTO_CLAIM_ENABLED: 'false',
        DB_CLEANER_ENABLED: 'false',
        L1_RPC_URL: 'http://127.0.0.1:9',
        L2_RPC_URL: 'http://127.0.0.1:9',
        L1_CONTRACT_ADDRESS: '0x' + '11'.repeat(20),
        L2_CONTRACT_ADDRESS: '0x' + '22'.repeat(20),
        L1_SIGNER_TYPE: 'private-key',
        L2_SIGNER_TYPE: 'private-key',
        L1_SIGNER_PRIVATE_KEY: key,
        L2_SIGNER_PRIVATE_KEY: key,
        API_RATE_LIMIT_PER_SECOND: '1000',
        LOG_LEVEL: 'info',
      });
      const url = relayer.url;
      await until(
        'the relayer API',
        async () => (await fetch(`${url}/messages?limit=1`).catch(() => undefined))?.status === 200,
        30_000,
      );
      const canary = startCanary('relayer-liveness', { url: `${url}/health/live` });
      const load = traffic(url, 4);
      await new Promise((r) => setTimeout(r, 1_000));
      const linesBefore = relayer.lines.length;
      const cutAt = Date.now();
      await proxy.stop();
      await new Promise((r) => setTimeout(r, 6_000));
      const restoredAt = Date.now();
      await proxy.start();
      const linesDuring = relayer.lines.length - linesBefore;
      await until(
        '200 again after the outage',
        async () => (await fetch(`${url}/messages?limit=1`)).status === 200,
        30_000,
      );
      await new Promise((r) => setTimeout(r, 1_000));
      const seen = await load.stop();
      const report = await canary.stop();

      const during = seen.filter((s) => s.at > cutAt + 1_500 && s.at < restoredAt);
      const statuses = new Set(during.map((s) => s.status));
      process.stdout.write(
        `relayer-db-outage: ${seen.length} answers, during the outage ${JSON.stringify([...statuses])}; ${linesDuring} log lines printed during the 6 s outage\n`,
      );
      expect(during.length).toBeGreaterThan(0);
      expect([...statuses]).toEqual([503]);
      const problem = JSON.parse(during[0]!.body) as { status: number; title: string; detail: string };
      expect(problem).toMatchObject({
        status: 503,
        title: 'Service Unavailable',
        detail: 'The database is unavailable; try again later.',
      });
      expect(seen.filter((s) => s.status === 500 || s.status === 0)).toEqual([]);
      expect(seen.at(-1)!.status).toBe(200);
      expect(report.failed).toBe(0);
      // Every line JSON: knex's own log goes through the logger.
      const notJson = relayer.lines.filter((l) => {
        if (l === '') return false;
        try {
          JSON.parse(l);
          return false;
        } catch {
          return true;
        }
      });
      expect(notJson).toEqual([]);
      relayer.child.kill('SIGTERM');
      expect(await relayer.exited).toBe(0);
    },
  );
});
