import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Pid files of the processes a devnet started (its chains and its bundler), in its state directory: the second line of
 * defence after the watchdog (which a SIGKILL of the whole process tree, or the OOM killer, can take down with the
 * parent). The next `l2stack devnet`/`dev` on the same directory kills every one of them whose parent is gone.
 */
interface ChainRecord {
  /** The process id (named `anvil` because chain records were written before the bundler had one). */
  anvil: number;
  parent: number;
  port: number;
}

/** What a pid file's name says the process is, and what its command line must contain to still be it. */
const KINDS = { anvil: 'anvil', bundler: 'alto' } as const;
export type ProcessKind = keyof typeof KINDS;
const FILE = /^(anvil|bundler)-(\d+)\.pid$/;

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, it is just not ours to signal.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The command line of `pid` ('' when unknown): /proc on Linux, ps elsewhere. */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ');
  } catch {
    const ps = spawnSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8' });
    return ps.status === 0 ? ps.stdout.trim() : '';
  }
}

/** Records a running devnet process listening on `port`; the returned function removes the record. */
export function recordProcess(dir: string, kind: ProcessKind, pid: number, port: number): () => void {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${kind}-${port}.pid`);
  const record: ChainRecord = { anvil: pid, parent: process.pid, port };
  writeFileSync(file, `${JSON.stringify(record)}\n`);
  return () => {
    try {
      const current = JSON.parse(readFileSync(file, 'utf8')) as ChainRecord;
      if (current.anvil === pid) rmSync(file, { force: true });
    } catch {
      // already gone or replaced
    }
  };
}

/**
 * Kills the processes recorded in `dir` whose parent process is gone and removes their records; returns what it killed.
 * A pid is killed only while its command line is still that anvil (or bundler) on that port, so a pid the system has
 * reused since is left alone.
 */
export async function reapOrphanChains(dir: string): Promise<{ pid: number; port: number }[]> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const killed: { pid: number; port: number }[] = [];
  for (const name of names) {
    const kind = FILE.exec(name)?.[1] as ProcessKind | undefined;
    if (!kind) continue;
    const file = join(dir, name);
    let record: ChainRecord;
    try {
      record = JSON.parse(readFileSync(file, 'utf8')) as ChainRecord;
    } catch {
      rmSync(file, { force: true });
      continue;
    }
    if (isAlive(record.parent)) continue;
    const cmd = commandLine(record.anvil);
    if (isAlive(record.anvil) && cmd.includes(KINDS[kind]) && cmd.includes(`--port ${record.port}`)) {
      try {
        process.kill(record.anvil, 'SIGKILL');
        killed.push({ pid: record.anvil, port: record.port });
      } catch {
        // exited meanwhile
      }
    }
    rmSync(file, { force: true });
  }
  // Its port is free only once the chain is gone: the caller checks ports next.
  const deadline = Date.now() + 5_000;
  while (killed.some((k) => isAlive(k.pid)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return killed;
}
