import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { openTestDb } from '../../helpers/db.js';
import { reservePort } from '../../../src/devnet/anvil.js';
import { useSharedDevnet, type SharedRelayerDevnet } from './shared-devnet.js';

/**
 * Faults with the real `l2stack relayer` process: SIGKILL at random points while it claims, round after
 * round, then a clean run: every message ends claimed exactly once and no row is left PENDING. The same
 * runs show that secrets never reach the logs, and that SIGTERM drains and exits 0.
 */
const state = inject('devnet');
const ROUNDS = 5;
const BIN = fileURLToPath(new URL('../../../bin/l2stack.js', import.meta.url));
const DB_PASSWORD = `pw-${randomBytes(8).toString('hex')}`;
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let d: SharedRelayerDevnet;
let dbEnv: Record<string, string>;
let cleanup: () => Promise<void> = async () => undefined;
const output: string[] = [];

beforeAll(async () => {
  testDb = await openTestDb();
  d = await useSharedDevnet(state, 18);
  if (testDb.client.kind === 'postgres') {
    // A database of its own: the relayer process uses its fixed schema name.
    const name = `relayer_fault_${randomBytes(4).toString('hex')}`;
    await testDb.client.knex.raw(`create database ${name}`);
    const c = testDb.client.config as { host: string; port: number; user?: string };
    dbEnv = { DATABASE_HOST: c.host, DATABASE_PORT: String(c.port), DATABASE_NAME: name, ...(c.user ? { DATABASE_USER: c.user } : {}) };
    cleanup = async () => void (await testDb.client.knex.raw(`drop database if exists ${name} with (force)`));
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'l2stack-relayer-fault-'));
    dbEnv = { DATABASE_PGLITE_DIR: dir };
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  }
});

afterAll(async () => {
  await cleanup();
  d?.destroy();
  await testDb?.close();
});

interface Proc { child: ChildProcess; url: string; exited: Promise<number | null>; lines: string[] }

async function spawnRelayer(): Promise<Proc> {
  const port = await reservePort('127.0.0.1', 0, 'relayer API');
  const env = {
    PATH: process.env.PATH ?? '',
    ...d.env({ API_PORT: String(port), LOG_LEVEL: 'debug', MESSAGE_SUBMISSION_TIMEOUT: '5000' }),
    DATABASE_PASSWORD: DB_PASSWORD,
    ...dbEnv,
  };
  const child = spawn(process.execPath, [BIN, 'relayer'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    output.push(text);
    lines.push(...text.split('\n'));
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, url: `http://127.0.0.1:${port}`, exited, lines };
}

async function until(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

interface Rec { messageHash: string; direction: string; status: string; history: { status: string }[] }

async function records(url: string): Promise<Rec[]> {
  const out: Rec[] = [];
  for (let page = 1; ; page++) {
    const body = (await (await fetch(`${url}/messages?limit=100&page=${page}`)).json()) as { data: Rec[]; meta: { totalItemsCount: number } };
    out.push(...body.data);
    if (out.length >= body.meta.totalItemsCount || body.data.length === 0) return out;
  }
}

describe('relayer process under faults', () => {
  const sent = { l1: [] as string[], l2: [] as string[] };

  it(`behavior: SIGKILL at random points of claiming (${ROUNDS} rounds), then a clean run: every message claimed exactly once, none left PENDING; SIGTERM drains and exits 0`, { timeout: 240_000 }, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      sent.l1.push(...(await d.send('l1', 2)));
      sent.l2.push(...(await d.send('l2', 2)));
      const p = await spawnRelayer();
      await until('the relayer to start its directions', () => p.lines.some((l) => l.includes('direction started')) || p.child.exitCode !== null);
      expect(p.child.exitCode).toBeNull();
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 2_500)));
      p.child.kill('SIGKILL');
      await p.exited;
    }
    const p = await spawnRelayer();
    const expected = new Set([...sent.l1.map((h) => `L1_TO_L2:${h}`), ...sent.l2.map((h) => `L2_TO_L1:${h}`)]);
    let mine: Rec[] = [];
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
