import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { reservePort } from '../../src/devnet/anvil.js';

const run = promisify(execFile);

/**
 * A Postgres cluster of one test's own (initdb into a temp directory, a free port, its unix socket in that
 * directory), so the test can stop and restart the database without touching the machine's shared server.
 * Needs the Postgres server binaries and, when run as root, the `postgres` account to run them as.
 */
export interface PrivatePostgres {
  port: number;
  /** DATABASE_* variables for a client of this cluster (database `postgres`, trust auth). */
  env: Record<string, string>;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops and removes the cluster. */
  destroy(): Promise<void>;
}

/** The directory of initdb/pg_ctl, or why there is none. */
export function postgresBinaries(): { bin: string } | { missing: string } {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) return { missing: `no Postgres server binaries under ${root}/*/bin` };
  return { bin: join(root, versions[0]!, 'bin') };
}

export async function startPrivatePostgres(bin: string): Promise<PrivatePostgres> {
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'l2stack-pg-'));
  const data = join(dir, 'data');
  const port = await reservePort('127.0.0.1', 0, 'private postgres');
  // Postgres refuses to run as root: as root, run its tools as the `postgres` account, which owns the directory.
  const tool = (name: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, name), ...args]) : run(join(bin, name), args);
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  await tool('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = async () =>
    void (await tool('pg_ctl', ['start', '-w', '-D', data, '-l', join(dir, 'log'), '-o', options]));
  const stop = async () => void (await tool('pg_ctl', ['stop', '-w', '-m', 'fast', '-D', data]));
  await start();
  return {
    port,
    env: {
      DATABASE_HOST: '127.0.0.1',
      DATABASE_PORT: String(port),
      DATABASE_USER: 'postgres',
      DATABASE_NAME: 'postgres',
    },
    start,
    stop,
    async destroy() {
      await tool('pg_ctl', ['stop', '-w', '-m', 'immediate', '-D', data]).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
