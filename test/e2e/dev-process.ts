import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DevnetState } from '../../src/devnet/state-file.js';
import { l2stackArgs } from '../helpers/l2stack.js';
import { newMarker, processesWithMarker } from '../helpers/processes.js';
import { within } from '../helpers/within.js';

/** `l2stack dev` as a user runs it (`npm start`), spawned by a test that needs a devnet of its own. */
export interface DevProcess {
  state: DevnetState;
  /** Its state file (`--state-file`), for the `l2stack devnet` commands that read it. */
  stateFile: string;
  /** Waits until `probe` gives a value, failing with the process's last output when it exits or time runs out. */
  until<T>(what: string, probe: () => Promise<T | undefined>, ms: number): Promise<T>;
  /** What it printed so far (stdout and stderr). */
  output(): string;
  /** Its processes still alive, itself and every child (anvil, the bundler): helpers/processes.ts marks them. */
  processes(): number[];
  /** Ctrl-C: SIGINT, and its exit code once it exited (bounded by `ms`, then SIGKILL). */
  interrupt(ms: number): Promise<number | null>;
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
  const marker = newMarker();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    [marker.name]: marker.value,
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
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  /** Sends `signal` and waits `ms` for the exit; past that, SIGKILL and an error with its last output. */
  const end = async (signal: NodeJS.Signals, ms: number) => {
    child.kill(signal);
    try {
      return await within(`l2stack dev to exit on ${signal}`, ms, exited);
    } catch (err) {
      child.kill('SIGKILL');
      throw new Error(`${(err as Error).message}; its last output:\n${output.slice(-3_000)}`, { cause: err });
    }
  };
  const interrupt = (ms: number) => end('SIGINT', ms);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) await end('SIGTERM', 60_000);
  };
  try {
    await until('l2stack dev ready', async () => (output.includes('l2stack dev ready') ? true : undefined), 300_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    state: JSON.parse(readFileSync(stateFile, 'utf8')) as DevnetState,
    stateFile,
    until,
    output: () => output,
    processes: () => processesWithMarker(marker),
    interrupt,
    stop,
  };
}
