import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openTestDb } from '../../helpers/db.js';
import { loadRelayerConfig } from '../../../src/relayer/config.js';
import { startRelayer, type Relayer } from '../../../src/relayer/index.js';
import { testCommon } from './harness.js';
import { keys, useSharedDevnet, waitClaimed, type SharedRelayerDevnet } from './shared-devnet.js';

/**
 * High availability: two relayers on one database (each with its own logger, metrics and shutdown, as
 * two processes would have). One is active per direction; when it stops, the standby takes over and
 * every message is claimed exactly once.
 */
const state = inject('devnet');
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let d: SharedRelayerDevnet;
let schema: string;
const relayers: Relayer[] = [];

beforeAll(async () => {
  testDb = await openTestDb();
  schema = testDb.schema('relayer');
  d = await useSharedDevnet(state, 17);
});

afterAll(async () => {
  for (const r of relayers) await r.stop();
  d?.destroy();
  await testDb?.close();
});

async function start(): Promise<Relayer> {
  const loaded = loadRelayerConfig(d.env());
  const r = await startRelayer({ common: testCommon(), db: testDb.client, config: { ...loaded, api: { ...loaded.api, port: 0 } }, schema });
  relayers.push(r);
  return r;
}

async function checks(r: Relayer): Promise<Record<string, string>> {
  const body = (await (await fetch(`${r.url}/health/ready`)).json()) as { checks: { name: string; ok: boolean; detail?: string }[] };
  return Object.fromEntries(body.checks.filter((c) => c.name.startsWith('listener.')).map((c) => [c.name, c.ok ? 'ok' : c.detail ?? '']));
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('two relayers on one database', () => {
  it('behavior: one is active per direction, the standby takes over when it stops, and every message is claimed exactly once', { timeout: 180_000 }, async () => {
    const a = await start();
    await until('relayer A to lead both directions', async () => {
      const c = await checks(a);
      return c['listener.L1_TO_L2'] === 'ok' && c['listener.L2_TO_L1'] === 'ok' ? true : undefined;
    });
    const b = await start();
    // B stands by: its directions wait for the leadership lock.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await checks(b)).toEqual({ 'listener.L1_TO_L2': 'listener not started (waiting for leadership)', 'listener.L2_TO_L1': 'listener not started (waiting for leadership)' });

    const first = { l1: await d.send('l1', 3), l2: await d.send('l2', 3) };
    const got1 = await waitClaimed(testDb.client, schema, first);
    expect(keys(first).map((k) => got1.get(k)?.status)).toEqual(keys(first).map(() => 'CLAIMED_SUCCESS'));

    await a.stop();
    const second = { l1: await d.send('l1', 3), l2: await d.send('l2', 3) };
    await until('relayer B to take over both directions', async () => {
      const c = await checks(b);
      return c['listener.L1_TO_L2'] === 'ok' && c['listener.L2_TO_L1'] === 'ok' ? true : undefined;
    });
    const got2 = await waitClaimed(testDb.client, schema, second);
    expect(keys(second).map((k) => got2.get(k)?.status)).toEqual(keys(second).map(() => 'CLAIMED_SUCCESS'));

    // Exactly once: one claim event per message on chain, one PENDING (one submission) per message in the history.
    for (const layer of ['l1', 'l2'] as const) {
      const hashes = [...first[layer], ...second[layer]];
      const events = await d.claimEvents(layer, hashes);
      expect(hashes.map((h) => events.get(h))).toEqual(hashes.map(() => 1));
    }
    for (const k of [...keys(first), ...keys(second)]) expect((got1.get(k) ?? got2.get(k))!.pendings).toBe(1);
  });
});
