/**
 * The one launcher of the RPC benchmarks (`rpc`, `rpc-ws`): `l2stack rpc` in its own process on port 0
 * (embedded PGlite in memory unless DATABASE_HOST is set), no rate limit, and its CPU read from /proc.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { L2STACK_BIN } from '../helpers/l2stack.js';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

export interface RunningEndpoint {
  url: string;
  pid: number;
  child: ChildProcess;
  /** SIGTERM, resolved once the process has exited. */
  stop(): Promise<void>;
}

/** CPU seconds (user + system) used so far by process `pid` and its live children (RPC_WORKERS). */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    // Without CONFIG_PROC_CHILDREN: the process alone.
  }
  return (
    (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND + children.reduce((sum, c) => sum + cpuSeconds(c), 0)
  );
}

/** Resident memory of `pid` in MiB. */
export const rssMiB = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/**
 * Starts `l2stack rpc` in front of `upstream` and resolves once it listens. `env` adds to (or overrides)
 * the bench defaults; `nodeFlags` go to node before the script (e.g. --cpu-prof); `entry`: bin/l2stack.js (the
 * TypeScript sources through tsx) unless given (builtEntry(): the compiled JavaScript, as the image runs it).
 */
export async function startEndpoint(
  upstream: string,
  env: Record<string, string> = {},
  nodeFlags: string[] = [],
  entry = L2STACK_BIN,
): Promise<RunningEndpoint> {
  const child = spawn(process.execPath, [...nodeFlags, entry, 'rpc'], {
    env: {
      ...process.env,
      DATABASE_PGLITE_DIR: 'memory://',
      LOG_LEVEL: 'warn',
      RPC_PORT: '0',
      RPC_UPSTREAM_URLS: upstream,
      RPC_RATE_LIMIT_PER_SECOND: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`l2stack rpc exited with ${code}`)));
  });
  child.stdout!.resume();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    url,
    pid: child.pid!,
    child,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * The endpoint as the container image runs it: the sources compiled by tsc into dist/ (gitignored), built
 * here first. Through tsx (bin/l2stack.js in a checkout) esbuild wraps every function made per request in a
 * `__name` call (keepNames), a cost the deployed build does not have. Type errors elsewhere in a tree being
 * edited do not stop tsc from emitting, so only a missing output fails.
 */
export function builtEntry(): string {
  const root = new URL('../../', import.meta.url).pathname;
  spawnSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')],
    { cwd: root, stdio: 'ignore' },
  );
  const entry = join(root, 'dist/src/cli.js');
  if (!existsSync(entry)) throw new Error(`tsc -p tsconfig.build.json wrote no ${entry}`);
  return entry;
}
