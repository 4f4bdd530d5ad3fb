import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DevnetState } from '../../src/devnet/state-file.js';
import { ROOT, run } from './podman.js';

/** `l2stack devnet` as a user starts it, for the images to run against (a process of its own, no history). */
export interface DevnetProcess {
  state: DevnetState;
  stateFile: string;
  stop(): Promise<void>;
}

const BIN = `${ROOT}bin/l2stack.js`;

/** Starts `l2stack devnet --history-hours 0` on a temporary state file; resolves once it printed "ready". */
export async function startDevnet(deadlineMs = 300_000): Promise<DevnetProcess> {
  const stateFile = join(mkdtempSync(join(tmpdir(), 'l2stack-image-devnet-')), 'devnet.json');
  const env = { ...process.env };
  // Its coordinator's database is embedded and in memory, whatever database the rest of CI uses.
  delete env.DATABASE_HOST;
  delete env.DATABASE_PGLITE_DIR;
  const child = spawn(process.execPath, [BIN, 'devnet', '--history-hours', '0', '--state-file', stateFile], {
    env,
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (c: Buffer) => (output = (output + c.toString()).slice(-20_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + deadlineMs;
  while (!output.includes('l2stack devnet ready')) {
    if (child.exitCode !== null)
      throw new Error(`l2stack devnet exited ${child.exitCode} before it was ready:\n${output.slice(-3_000)}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`l2stack devnet not ready within ${deadlineMs / 1_000} s:\n${output.slice(-3_000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { state: JSON.parse(readFileSync(stateFile, 'utf8')) as DevnetState, stateFile, stop };
}

/** Sends a message with `l2stack devnet send-message` from devnet account `account`; returns its hash. */
export async function sendMessage(devnet: DevnetProcess, from: 'l1' | 'l2', account: number): Promise<string> {
  const args = [
    BIN,
    'devnet',
    'send-message',
    '--from',
    from,
    '--account',
    String(account),
    '--state-file',
    devnet.stateFile,
  ];
  const r = await run(process.execPath, args, { timeoutMs: 120_000, env: process.env });
  const hash = r.stdout.trim().toLowerCase();
  if (r.code !== 0 || !/^0x[0-9a-f]{64}$/.test(hash))
    throw new Error(`send-message --from ${from} exited ${r.code}: ${r.stdout}${r.stderr}`.slice(0, 3_000));
  return hash;
}

/**
 * A TCP port on every interface forwarding to `port` on 127.0.0.1. The devnet's chains listen on loopback
 * only; containers on a bridge network (the compose stack) reach the host as host.containers.internal.
 */
export async function forward(port: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => (client.destroy(), upstream.destroy()));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '0.0.0.0', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The port of a URL such as http://127.0.0.1:43121. */
export const portOf = (url: string): number => Number(new URL(url).port);
