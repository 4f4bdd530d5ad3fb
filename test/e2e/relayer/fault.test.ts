import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { openTestDb } from '../../helpers/db.js';
import { useSharedDevnet, type SharedRelayerDevnet } from './shared-devnet.js';
import { processDatabase, records, spawnRelayer, until, type MessageRecord, type ProcessDatabase } from './process.js';

/**
 * Faults with the real `l2stack relayer` process: SIGKILL at random points while it claims, round after
 * round, then a clean run: every message ends claimed exactly once and no row is left PENDING. The same
 * runs show that secrets never reach the logs, and that SIGTERM drains and exits 0.
 */
const state = inject('devnet');
const ROUNDS = 5;
const DB_PASSWORD = `pw-${randomBytes(8).toString('hex')}`;
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let d: SharedRelayerDevnet;
let database: ProcessDatabase | undefined;
const output: string[] = [];

beforeAll(async () => {
  testDb = await openTestDb();
  d = await useSharedDevnet(state, 18);
  database = await processDatabase(testDb, 'fault');
});

afterAll(async () => {
  await database?.drop();
  d?.destroy();
  await testDb?.close();
});

const spawn = () => spawnRelayer({ ...d.env({ LOG_LEVEL: 'debug', MESSAGE_SUBMISSION_TIMEOUT: '5000' }), DATABASE_PASSWORD: DB_PASSWORD, ...database!.env }, output);

describe('relayer process under faults', () => {
  const sent = { l1: [] as string[], l2: [] as string[] };

  it(`behavior: SIGKILL at random points of claiming (${ROUNDS} rounds), then a clean run: every message claimed exactly once, none left PENDING; SIGTERM drains and exits 0`, { timeout: 240_000 }, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      sent.l1.push(...(await d.send('l1', 2)));
      sent.l2.push(...(await d.send('l2', 2)));
      const p = await spawn();
      await until('the relayer to start its directions', () => p.lines.some((l) => l.includes('direction started')) || p.child.exitCode !== null);
      expect(p.child.exitCode).toBeNull();
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 2_500)));
      p.child.kill('SIGKILL');
      await p.exited;
    }
    const p = await spawn();
    const expected = new Set([...sent.l1.map((h) => `L1_TO_L2:${h}`), ...sent.l2.map((h) => `L2_TO_L1:${h}`)]);
    let mine: MessageRecord[] = [];
    await until('every message to be claimed', async () => {
      try {
        mine = (await records(p.url)).filter((r) => expected.has(`${r.direction}:${r.messageHash}`));
      } catch {
        return false;
      }
      return mine.length === expected.size && mine.every((r) => r.status === 'CLAIMED_SUCCESS');
    }, 120_000);
    const all = await records(p.url);
    expect(all.filter((r) => r.status === 'PENDING')).toEqual([]);
    for (const layer of ['l1', 'l2'] as const) {
      const events = await d.claimEvents(layer, sent[layer]);
      expect(sent[layer].map((h) => events.get(h))).toEqual(sent[layer].map(() => 1));
    }
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('behavior: neither the signer key nor the database password appears in the logs', () => {
    const text = output.join('');
    expect(text).toContain('effective configuration');
    expect(text.length).toBeGreaterThan(1_000);
    expect(text.toLowerCase()).not.toContain(d.relayerKey.slice(2).toLowerCase());
    expect(text).not.toContain(DB_PASSWORD);
  });
});
