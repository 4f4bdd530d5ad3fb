import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DevnetState } from '../../src/devnet/state-file.js';
import { l2stackArgs } from '../helpers/l2stack.js';

/** `l2stack dev` as a user runs it (`npm start`), spawned by a test that needs a devnet of its own. */
export interface DevProcess {
  state: DevnetState;
  /** Waits until `probe` gives a value, failing with the process's last output when it exits or time runs out. */
  until<T>(what: string, probe: () => Promise<T | undefined>, ms: number): Promise<T>;
  stop(): Promise<void>;
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
      .listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      })
      .on('error', reject);
  });

/**
 * Spawns `l2stack dev --history-hours 1` on the embedded database (DATABASE_HOST removed, as on a laptop) with
 * its service ports free, and resolves once it printed "l2stack dev ready" (up to 300 s), with its state file read.
 */
export async function spawnDev(name: string): Promise<DevProcess> {
  const stateFile = join(mkdtempSync(join(tmpdir(), `l2stack-${name}-`)), 'devnet.json');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    RPC_PORT: String(await freePort()),
    TOKEN_API_PORT: String(await freePort()),
    API_PORT: String(await freePort()),
  };
  delete env.DATABASE_HOST;
  const child: ChildProcess = spawn(
    process.execPath,
    l2stackArgs('dev', '--history-hours', '1', '--state-file', stateFile),
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const until = async <T>(what: string, probe: () => Promise<T | undefined>, ms: number): Promise<T> => {
    const deadline = Date.now() + ms;
    for (;;) {
      if (child.exitCode !== null)
        throw new Error(`l2stack dev exited ${child.exitCode} while waiting for ${what}:\n${output.slice(-3_000)}`);
      const value = await probe().catch(() => undefined);
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`${what} not within ${ms / 1_000} s:\n${output.slice(-3_000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  try {
    await until('l2stack dev ready', async () => (output.includes('l2stack dev ready') ? true : undefined), 300_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { state: JSON.parse(readFileSync(stateFile, 'utf8')) as DevnetState, until, stop };
}
