import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { databaseKind, openTestDb } from '../../helpers/db.js';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.js';
import { postgresBinaries, startPrivatePostgres, type PrivatePostgres } from '../../helpers/private-postgres.js';
import { useSharedDevnet, type SharedRelayerDevnet } from './shared-devnet.js';
import { processDatabase, records, spawnRelayer, until, type ProcessDatabase, type RelayerProcess } from './process.js';
import { claimCounts, deadPendingClaims, pendingFromApi } from './exactly-once.js';

/**
 * Outages around the real `l2stack relayer` process on the shared devnet: its L2 RPC endpoint gone for
 * 15 s (a TCP proxy in between is stopped), and its database restarted (a private Postgres cluster on
 * the Postgres pass; on PGlite, where the database lives in the process, the process is killed and
 * restarted on the same directory). Afterwards every message is claimed exactly once and no message is
 * left PENDING without a live transaction.
 */
const state = inject('devnet');
let testDb: Awaited<ReturnType<typeof openTestDb>>;
const cleanups: (() => Promise<unknown> | void)[] = [];

beforeAll(async () => {
  testDb = await openTestDb();
});

afterAll(async () => {
  for (const fn of cleanups.reverse()) await fn();
  await testDb?.close();
});

type Sent = { l1: string[]; l2: string[] };
const keysOf = (s: Sent) => [...s.l1.map((h) => `L1_TO_L2:${h}`), ...s.l2.map((h) => `L2_TO_L1:${h}`)];

/** Waits until the relayer at `url` reports every sent message CLAIMED_SUCCESS; returns the statuses it saw last. */
async function waitAllClaimed(p: () => RelayerProcess, sent: Sent, timeoutMs = 120_000): Promise<Map<string, string>> {
  const expected = new Set(keysOf(sent));
  let seen = new Map<string, string>();
  await until(
    'every message to be claimed',
    async () => {
      try {
        seen = new Map(
          (await records(p().url))
            .filter((r) => expected.has(`${r.direction}:${r.messageHash}`))
            .map((r) => [`${r.direction}:${r.messageHash}`, r.status]),
        );
      } catch {
        return false; // the API is briefly unreachable while a process restarts
      }
      return seen.size === expected.size && [...seen.values()].every((s) => s === 'CLAIMED_SUCCESS');
    },
    timeoutMs,
  ).catch((err: Error) => {
    throw new Error(`${err.message}: ${JSON.stringify(Object.fromEntries(seen))}`);
  });
  return seen;
}

/** Exactly once on chain (one MessageClaimed each) and no PENDING row without a transaction the node knows. */
async function expectExactlyOnce(d: SharedRelayerDevnet, url: string, sent: Sent): Promise<void> {
  const onL2 = await claimCounts(d.l2, state.l2.messageService, sent.l1, d.from.l2);
  const onL1 = await claimCounts(d.l1, state.l1.messageService, sent.l2, d.from.l1);
  expect(sent.l1.map((h) => onL2.get(h))).toEqual(sent.l1.map(() => 1));
  expect(sent.l2.map((h) => onL1.get(h))).toEqual(sent.l2.map(() => 1));
  expect(await deadPendingClaims(await pendingFromApi(url), d)).toEqual([]);
}

const firstActivity = (p: RelayerProcess) =>
  until(
    'the relayer to claim its first message',
    async () =>
      (await records(p.url).catch(() => [])).some((r) => r.status === 'PENDING' || r.status === 'CLAIMED_SUCCESS'),
    60_000,
  );

async function stopProcess(p: RelayerProcess): Promise<number | null> {
  p.child.kill('SIGTERM');
  return p.exited;
}

describe('relayer process during outages', () => {
  it(
    'behavior: the L2 RPC stopped for 15 s: readiness fails on l2Rpc (503), liveness stays 200, and every message sent before and during the outage is claimed exactly once',
    { timeout: 180_000 },
    async () => {
      const d = await useSharedDevnet(state, 'random');
      cleanups.push(() => d.destroy());
      const upstream = new URL(state.l2.upstreamRpcUrl);
      const proxy: TcpProxy = await startTcpProxy({ host: upstream.hostname, port: Number(upstream.port) });
      cleanups.push(() => proxy.close());
      const database: ProcessDatabase = await processDatabase(testDb, 'outage');
      cleanups.push(() => database.drop());
      const p = await spawnRelayer({ ...d.env({ L2_RPC_URL: proxy.url }), ...database.env });
      cleanups.push(() => void p.child.kill('SIGKILL'));

      const sent: Sent = { l1: await d.send('l1', 3), l2: await d.send('l2', 3) };
      await firstActivity(p);
      // Down while the first messages are being claimed; more are sent both ways while it is down.
      await proxy.stop();
      const downAt = Date.now();
      sent.l1.push(...(await d.send('l1', 2)));
      sent.l2.push(...(await d.send('l2', 2)));

      let ready: { status: number; checks: Record<string, boolean> } | undefined;
      await until(
        'readiness to report the L2 RPC failing',
        async () => {
          const res = await fetch(`${p.url}/health/ready`);
          const body = (await res.json()) as { checks: { name: string; ok: boolean }[] };
          ready = { status: res.status, checks: Object.fromEntries(body.checks.map((c) => [c.name, c.ok])) };
          return !ready.checks.l2Rpc;
        },
        10_000,
      );
      expect(ready).toMatchObject({ status: 503, checks: { database: true, l1Rpc: true, l2Rpc: false } });
      expect((await fetch(`${p.url}/health/live`)).status).toBe(200);

      await new Promise((r) => setTimeout(r, Math.max(15_000 - (Date.now() - downAt), 0)));
      expect((await fetch(`${p.url}/health/live`)).status).toBe(200);
      await proxy.start();

      await waitAllClaimed(() => p, sent);
      await until('readiness to recover', async () => (await fetch(`${p.url}/health/ready`)).status === 200, 30_000);
      await expectExactlyOnce(d, p.url, sent);
      expect(p.lines.join('\n')).toMatch(/iteration failed; retrying/);
      expect(await stopProcess(p)).toBe(0);
    },
  );

  it(
    `behavior: the database ${databaseKind() === 'postgres' ? 'restarted while the relayer claims' : 'process (PGlite) killed while claiming and restarted on the same directory'}: every message claimed exactly once`,
    { timeout: 180_000 },
    async (t) => {
      const d = await useSharedDevnet(state, 'random');
      cleanups.push(() => d.destroy());
      const sent: Sent = { l1: [], l2: [] };
      const sendBatch = async (n: number) => {
        sent.l1.push(...(await d.send('l1', n)));
        sent.l2.push(...(await d.send('l2', n)));
      };

      if (databaseKind() === 'postgres') {
        const bins = postgresBinaries();
        if ('missing' in bins) {
          console.log(`skipped: the database restart needs a private Postgres cluster, but ${bins.missing}`);
          t.skip();
          return;
        }
        const pg: PrivatePostgres = await startPrivatePostgres(bins.bin);
        cleanups.push(() => pg.destroy());
        const p = await spawnRelayer({ ...d.env(), ...pg.env });
        cleanups.push(() => void p.child.kill('SIGKILL'));
        await sendBatch(3);
        await firstActivity(p);
        // Down for 5 s while claims are in flight; more messages arrive meanwhile.
        await pg.stop();
        await sendBatch(2);
        await new Promise((r) => setTimeout(r, 5_000));
        await pg.start();
        await waitAllClaimed(() => p, sent);
        await expectExactlyOnce(d, p.url, sent);
        expect(p.child.exitCode).toBeNull();
        expect(await stopProcess(p)).toBe(0);
        return;
      }

      const database = await processDatabase(testDb, 'restart');
      cleanups.push(() => database.drop());
      let p = await spawnRelayer({ ...d.env(), ...database.env });
      cleanups.push(() => void p.child.kill('SIGKILL'));
      await sendBatch(3);
      await firstActivity(p);
      p.child.kill('SIGKILL');
      await p.exited;
      await sendBatch(2);
      p = await spawnRelayer({ ...d.env(), ...database.env });
      cleanups.push(() => void p.child.kill('SIGKILL'));
      await waitAllClaimed(() => p, sent);
      await expectExactlyOnce(d, p.url, sent);
      expect(await stopProcess(p)).toBe(0);
    },
  );
});
