import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { openTestDb } from '../../helpers/db.js';
import type { MessagePair } from '../../helpers/message-pair.js';
import { reservePort } from '../../../src/devnet/anvil.js';
import { l2stackArgs } from '../../helpers/l2stack.js';

export interface RelayerProcess {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
  /** This process's output, line by line (complete lines; the last one once the process has exited). */
  lines: string[];
}

export interface ProcessDatabase {
  /** DATABASE_* variables naming the database every relayer process of the file shares. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

/** A database of its own for relayer processes (they use the fixed `relayer` schema). */
export async function processDatabase(
  testDb: Awaited<ReturnType<typeof openTestDb>>,
  label: string,
): Promise<ProcessDatabase> {
  if (testDb.client.kind === 'postgres') {
    const name = `relayer_${label}_${randomBytes(4).toString('hex')}`;
    await testDb.client.knex.raw(`create database ${name}`);
    const c = testDb.client.config as { host: string; port: number; user?: string };
    return {
      env: {
        DATABASE_HOST: c.host,
        DATABASE_PORT: String(c.port),
        DATABASE_NAME: name,
        ...(c.user ? { DATABASE_USER: c.user } : {}),
      },
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
/**
 * The environment of a relayer process claiming L1→L2 on a message pair (test/helpers/message-pair.ts) with one key
 * on both chains, 200 ms listeners and one confirmation; `extra` adds to it.
 */
export const pairRelayerEnv = (
  d: MessagePair,
  db: ProcessDatabase,
  key: string,
  extra: Record<string, string> = {},
): Record<string, string> => ({
  ...db.env,
  L1_L2_AUTO_CLAIM_ENABLED: 'true',
  L2_L1_AUTO_CLAIM_ENABLED: 'false',
  DB_CLEANER_ENABLED: 'false',
  L1_RPC_URL: d.l1.url,
  L2_RPC_URL: d.l2.url,
  L1_CONTRACT_ADDRESS: d.l1Service,
  L2_CONTRACT_ADDRESS: d.l2Service,
  L1_SIGNER_TYPE: 'private-key',
  L2_SIGNER_TYPE: 'private-key',
  L1_SIGNER_PRIVATE_KEY: key,
  L2_SIGNER_PRIVATE_KEY: key,
  L1_L2_EOA_ENABLED: 'true',
  L1_L2_CALLDATA_ENABLED: 'true',
  L1_LISTENER_INITIAL_FROM_BLOCK: '0',
  L1_LISTENER_BLOCK_CONFIRMATION: '1',
  L1_LISTENER_INTERVAL: '200',
  L2_LISTENER_INTERVAL: '200',
  L2_LISTENER_RECEIPT_POLLING_INTERVAL: '200',
  LOG_LEVEL: 'info',
  ...extra,
});

/**
 * The real `l2stack relayer` command as an OS process, for fault tests: its own database (a fresh
 * Postgres database when the suite runs on Postgres, else a PGlite directory that outlives the process),
 * its output captured, its API on a free port.
 */
export async function spawnRelayer(env: Record<string, string>, sink: string[] = []): Promise<RelayerProcess> {
  const port = await reservePort('127.0.0.1', 0, 'relayer API');
  const child = spawn(process.execPath, l2stackArgs('relayer'), {
    env: { PATH: process.env.PATH ?? '', API_PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  // A chunk may end inside a line: each stream keeps its unfinished line until the rest arrives.
  for (const stream of [child.stdout!, child.stderr!]) {
    let partial = '';
    stream.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      sink.push(text);
      const parts = (partial + text).split('\n');
      partial = parts.pop()!;
      lines.push(...parts);
    });
    stream.on('end', () => partial && lines.push(partial));
  }
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

/**
 * The sum over all label sets of a metric on the relayer's /metrics, or undefined while the API does not
 * answer (the process is starting or gone).
 */
export async function metricSum(url: string, name: string): Promise<number | undefined> {
  let text: string;
  try {
    // Bounded: a scrape that does not answer counts as the API not answering, never as a hung test.
    const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) return undefined;
    text = await res.text();
  } catch {
    return undefined;
  }
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (m?.[1] === name) sum += Number(m[2]);
  }
  return sum;
}

/** The listener checks of /health/ready ("ok", or the failing check's detail) and the HTTP status. */
export async function listenerChecks(url: string): Promise<{ status: number; checks: Record<string, string> }> {
  const res = await fetch(`${url}/health/ready`);
  const body = (await res.json()) as { checks: { name: string; ok: boolean; detail?: string }[] };
  const checks = Object.fromEntries(
    body.checks
      .filter((c) => c.name.startsWith('listener.'))
      .map((c) => [c.name, c.ok ? (c.detail ?? 'ok') : (c.detail ?? '')]),
  );
  return { status: res.status, checks };
}

/**
 * The time (ms since the epoch) of the first log line of `p` containing every one of `texts`, from pino's own "time".
 */
export function loggedAt(p: RelayerProcess, ...texts: string[]): number | undefined {
  const line = p.lines.find((l) => texts.every((t) => l.includes(t)));
  const time = line ? /"time":"([^"]+)"/.exec(line)?.[1] : undefined;
  return time ? Date.parse(time) : undefined;
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
    // Bounded: a request that hangs fails (and the caller's poll retries) instead of holding the test to its timeout.
    const body = (await (
      await fetch(`${url}/messages?limit=100&page=${page}`, { signal: AbortSignal.timeout(15_000) })
    ).json()) as { data: MessageRecord[]; meta: { totalItemsCount: number } };
    out.push(...body.data);
    if (out.length >= body.meta.totalItemsCount || body.data.length === 0) return out;
  }
}
