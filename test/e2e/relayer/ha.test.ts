import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { databaseKind, openTestDb } from '../../helpers/db.js';
import { loadRelayerConfig } from '../../../src/relayer/config.js';
import { STANDING_BY, startRelayer, type Relayer } from '../../../src/relayer/index.js';
import { testCommon } from './harness.js';
import { keys, useSharedDevnet, waitClaimed, type SharedRelayerDevnet } from './shared-devnet.js';
import { deadPendingClaims, pendingFromApi } from './exactly-once.js';
import {
  listenerChecks,
  loggedAt,
  metricSum,
  processDatabase,
  records,
  spawnRelayer,
  until,
  type ProcessDatabase,
  type RelayerProcess,
} from './process.js';

/**
 * High availability: two relayers on one database. One is active per direction (a Postgres advisory lock;
 * on PGlite a lock within the process), the other stands by and reports itself ready; when the active
 * one goes, the standby takes over and every message is claimed exactly once. First as two relayers in
 * one process (each with its own logger, metrics and shutdown), then as two `l2stack relayer` processes
 * on Postgres, the active one SIGKILLed while messages flow.
 */
const state = inject('devnet');
const onPostgres = databaseKind() === 'postgres';
let testDb: Awaited<ReturnType<typeof openTestDb>>;

beforeAll(async () => {
  testDb = await openTestDb();
});

afterAll(async () => {
  await testDb?.close();
});

const BOTH_STANDING_BY = { 'listener.L1_TO_L2': STANDING_BY, 'listener.L2_TO_L1': STANDING_BY };
const BOTH_OK = { 'listener.L1_TO_L2': 'ok', 'listener.L2_TO_L1': 'ok' };

describe('two relayers on one database', () => {
  let d: SharedRelayerDevnet;
  let schema: string;
  const relayers: Relayer[] = [];

  beforeAll(async () => {
    schema = testDb.schema('relayer');
    d = await useSharedDevnet(state, 17);
  });

  afterAll(async () => {
    for (const r of relayers) await r.stop();
    d?.destroy();
  });

  async function start(): Promise<Relayer> {
    const loaded = loadRelayerConfig(d.env());
    const r = await startRelayer({
      common: testCommon(),
      db: testDb.client,
      config: { ...loaded, api: { ...loaded.api, port: 0 } },
      schema,
    });
    relayers.push(r);
    return r;
  }

  it(
    'behavior: one is active per direction, the standby is ready and takes over when it stops, and every message is claimed exactly once',
    { timeout: 180_000 },
    async () => {
      const a = await start();
      await until(
        'relayer A to lead both directions',
        async () => JSON.stringify((await listenerChecks(a.url)).checks) === JSON.stringify(BOTH_OK),
      );
      const b = await start();
      // B stands by: its directions wait for the leadership lock, and it is ready to take over.
      await until(
        'relayer B to stand by',
        async () => JSON.stringify((await listenerChecks(b.url)).checks) === JSON.stringify(BOTH_STANDING_BY),
        10_000,
      );
      expect((await listenerChecks(b.url)).status).toBe(200);

      const first = { l1: await d.send('l1', 3), l2: await d.send('l2', 3) };
      const got1 = await waitClaimed(testDb.client, schema, first);
      expect(keys(first).map((k) => got1.get(k)?.status)).toEqual(keys(first).map(() => 'CLAIMED_SUCCESS'));

      await a.stop();
      const second = { l1: await d.send('l1', 3), l2: await d.send('l2', 3) };
      await until(
        'relayer B to take over both directions',
        async () => JSON.stringify((await listenerChecks(b.url)).checks) === JSON.stringify(BOTH_OK),
      );
      const got2 = await waitClaimed(testDb.client, schema, second);
      expect(keys(second).map((k) => got2.get(k)?.status)).toEqual(keys(second).map(() => 'CLAIMED_SUCCESS'));

      // Exactly once: one claim event per message on chain, one PENDING (one submission) per message in the history.
      for (const layer of ['l1', 'l2'] as const) {
        const hashes = [...first[layer], ...second[layer]];
        const events = await d.claimEvents(layer, hashes);
        expect(hashes.map((h) => events.get(h))).toEqual(hashes.map(() => 1));
      }
      for (const k of [...keys(first), ...keys(second)]) expect((got1.get(k) ?? got2.get(k))!.pendings).toBe(1);
    },
  );
});

if (!onPostgres)
  console.log(
    'test/e2e/relayer/ha.test.ts: two relayer processes need PostgreSQL (DATABASE_HOST): a PGlite database belongs to one process; skipped on PGlite',
  );

describe.skipIf(!onPostgres)('two relayer processes on one Postgres database', () => {
  let d: SharedRelayerDevnet;
  let database: ProcessDatabase | undefined;
  const processes: RelayerProcess[] = [];

  beforeAll(async () => {
    d = await useSharedDevnet(state, 'random');
    database = await processDatabase(testDb, 'ha');
  });

  afterAll(async () => {
    for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.exited));
    await database?.drop();
    d?.destroy();
  });

  const spawn = async () => {
    const p = await spawnRelayer({ ...d.env(), ...database!.env });
    processes.push(p);
    return p;
  };
  const claimsSent = async (p: RelayerProcess) => (await metricSum(p.url, 'relayer_claims_sent_total')) ?? 0;
  const checksOf = async (p: RelayerProcess) => {
    try {
      return JSON.stringify((await listenerChecks(p.url)).checks);
    } catch {
      return 'API not answering';
    }
  };

  it(
    'behavior: one process leads each direction, the other is ready standing by; SIGKILL of the leader while messages flow: the standby takes over and every message is claimed exactly once',
    { timeout: 180_000 },
    async () => {
      const a = await spawn();
      await until('process A to lead both directions', async () => (await checksOf(a)) === JSON.stringify(BOTH_OK));
      const b = await spawn();
      await until('process B to stand by', async () => (await checksOf(b)) === JSON.stringify(BOTH_STANDING_BY));
      expect((await listenerChecks(b.url)).status).toBe(200);

      // Messages flow, one each way every few hundred milliseconds, until stopped.
      const sent = { l1: [] as string[], l2: [] as string[] };
      let flowing = true;
      const flow = (async () => {
        while (flowing) {
          const [l1, l2] = await Promise.all([d.send('l1', 1), d.send('l2', 1)]);
          sent.l1.push(...l1);
          sent.l2.push(...l2);
          await new Promise((r) => setTimeout(r, 300));
        }
      })();
      await until('process A to claim part of the flow', async () => (await claimsSent(a)) >= 4, 60_000);
      // Only the leader claimed: the standby sent nothing.
      expect(await claimsSent(b)).toBe(0);
      const killedAt = Date.now();
      a.child.kill('SIGKILL');
      await a.exited;

      await until('process B to claim', async () => (await claimsSent(b)) > 0, 60_000);
      const firstClaimAt = Date.now();
      const listening = ['L1_TO_L2', 'L2_TO_L1'].map((dir) => loggedAt(b, 'listener starting', `"direction":"${dir}"`));
      // The flow goes on a little with B alone, then every message must end claimed exactly once.
      await new Promise((r) => setTimeout(r, 3_000));
      flowing = false;
      await flow;
      const expected = new Set([...sent.l1.map((h) => `L1_TO_L2:${h}`), ...sent.l2.map((h) => `L2_TO_L1:${h}`)]);
      await until(
        'every message to be claimed',
        async () => {
          const mine = (await records(b.url)).filter((r) => expected.has(`${r.direction}:${r.messageHash}`));
          return mine.length === expected.size && mine.every((r) => r.status === 'CLAIMED_SUCCESS');
        },
        90_000,
      );
      for (const layer of ['l1', 'l2'] as const) {
        const events = await d.claimEvents(layer, sent[layer]);
        expect(sent[layer].map((h) => events.get(h))).toEqual(sent[layer].map(() => 1));
      }
      expect(await deadPendingClaims(await pendingFromApi(b.url), d)).toEqual([]);

      expect(listening.every((t) => t !== undefined)).toBe(true);
      const listenerTakeover = Math.max(...(listening as number[])) - killedAt;
      const claimTakeover = firstClaimAt - killedAt;
      console.log(
        `ha.test: ${expected.size} messages; standby took over ${listenerTakeover} ms after the SIGKILL (both listeners started), first claim after ${claimTakeover} ms`,
      );
      // Bounds, not performance: the standby polls the lock every second and the listeners run every 200 ms.
      expect(listenerTakeover).toBeLessThan(30_000);
      expect(claimTakeover).toBeLessThan(30_000);

      b.child.kill('SIGTERM');
      expect(await b.exited).toBe(0);
    },
  );
});
