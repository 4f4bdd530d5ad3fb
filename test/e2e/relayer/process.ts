import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import type { openTestDb } from '../../helpers/db.js';
import { reservePort } from '../../../src/devnet/anvil.js';

/**
 * The real `l2stack relayer` command as an OS process, for fault tests: its own database (a fresh
 * Postgres database when the suite runs on Postgres, else a PGlite directory that outlives the process),
 * its output captured, its API on a free port.
 */
export const BIN = fileURLToPath(new URL('../../../bin/l2stack.js', import.meta.url));

export interface RelayerProcess {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
  /** This process's output, line by line. */
  lines: string[];
}

export interface ProcessDatabase {
  /** DATABASE_* variables naming the database every relayer process of the file shares. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

/** A database of its own for relayer processes (they use the fixed `relayer` schema). */
export async function processDatabase(testDb: Awaited<ReturnType<typeof openTestDb>>, label: string): Promise<ProcessDatabase> {
  if (testDb.client.kind === 'postgres') {
    const name = `relayer_${label}_${randomBytes(4).toString('hex')}`;
    await testDb.client.knex.raw(`create database ${name}`);
    const c = testDb.client.config as { host: string; port: number; user?: string };
    return {
      env: { DATABASE_HOST: c.host, DATABASE_PORT: String(c.port), DATABASE_NAME: name, ...(c.user ? { DATABASE_USER: c.user } : {}) },
      drop: async () => void (await testDb.client.knex.raw(`drop database if exists ${name} with (force)`)),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), `l2stack-relayer-${label}-`));
  return { env: { DATABASE_PGLITE_DIR: dir }, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Starts `l2stack relayer` with exactly `env` (plus PATH and a free API_PORT). Every chunk of output is
 * also appended to `sink`, so a file can check all its processes' logs at the end.
 */
export async function spawnRelayer(env: Record<string, string>, sink: string[] = []): Promise<RelayerProcess> {
  const port = await reservePort('127.0.0.1', 0, 'relayer API');
  const child = spawn(process.execPath, [BIN, 'relayer'], { env: { PATH: process.env.PATH ?? '', API_PORT: String(port), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    sink.push(text);
    lines.push(...text.split('\n'));
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, url: `http://127.0.0.1:${port}`, exited, lines };
}

/** Polls `fn` every 100 ms until it is true; fails naming `what` after `timeoutMs`. */
export async function until(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export interface MessageRecord {
  messageHash: string;
  direction: string;
  status: string;
  history: { status: string }[];
}

/** Every message the relayer API at `url` knows, all pages. */
export async function records(url: string): Promise<MessageRecord[]> {
  const out: MessageRecord[] = [];
  for (let page = 1; ; page++) {
    const body = (await (await fetch(`${url}/messages?limit=100&page=${page}`)).json()) as { data: MessageRecord[]; meta: { totalItemsCount: number } };
    out.push(...body.data);
    if (out.length >= body.meta.totalItemsCount || body.data.length === 0) return out;
  }
}
