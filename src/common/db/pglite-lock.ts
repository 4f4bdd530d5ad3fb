import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { BaseError } from '../errors.js';

/**
 * PGlite does not lock its data directory, and two processes writing one directory corrupt it. Each opener therefore
 * creates `<dir>/l2stack.lock` with O_EXCL, holding its pid (and, on Linux, the pid's start time, so a pid reused by an
 * unrelated process, e.g. pid 1 in the next container, is not mistaken for the holder). A lock whose holder is gone
 * (killed, crashed) is taken over.
 */
export const LOCK_FILE = 'l2stack.lock';

export class DatabaseLockedError extends BaseError {
  override name = 'DatabaseLockedError';
}

interface Holder {
  pid: number;
  /** Clock ticks since boot at which `pid` started (Linux), or null where unknown. */
  started: number | null;
}

/** Directories this process holds: a second open in the same process is refused like another process's. */
const held = new Set<string>();

process.once('exit', () => {
  // A process that exits without closing its database (process.exit on a stuck shutdown) leaves no lock.
  for (const dir of held) removeIfOurs(join(dir, LOCK_FILE));
});

function startTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // Field 22; the command name (field 2) may hold spaces and parentheses, so count from its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const value = Number(fields[19]);
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}

function readHolder(file: string): Holder | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<Holder>;
    return typeof parsed.pid === 'number' ? { pid: parsed.pid, started: parsed.started ?? null } : undefined;
  } catch {
    return undefined;
  }
}

function holderAlive(holder: Holder, dir: string): boolean {
  // Our own pid in a lock we do not hold in this process: a previous process that had the same pid.
  if (holder.pid === process.pid) return held.has(dir);
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTime(holder.pid);
  return holder.started === null || now === null || now === holder.started;
}

function removeIfOurs(file: string): void {
  if (readHolder(file)?.pid === process.pid) rmSync(file, { force: true });
}

/**
 * Takes the lock of the PGlite directory `dir` (created if missing) for this process; returns its release. Throws
 * DatabaseLockedError naming the directory and the holder's pid while another live process (or this one) has it open.
 */
export function lockPgliteDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, LOCK_FILE);
  const me: Holder = { pid: process.pid, started: startTime(process.pid) };
  for (let attempt = 0; ; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, 'wx', 0o644);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 5) throw err;
      const holder = readHolder(file);
      if (holder && holderAlive(holder, dir)) {
        throw new DatabaseLockedError(
          `the embedded database directory ${dir} is in use by process ${holder.pid} (lock file ${file}). ` +
            'PGlite serves one process: stop that process, give this one another DATABASE_PGLITE_DIR, ' +
            'or share a PostgreSQL database (DATABASE_HOST) between processes.',
          { meta: { dir, pid: holder.pid } },
        );
      }
      if (holder === undefined && attempt === 0) {
        // Unreadable: perhaps created a moment ago by a starter that has not written its pid yet.
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
        continue;
      }
      // The holder is gone (killed, crashed): its lock is stale and taken over.
      rmSync(file, { force: true });
      continue;
    }
    try {
      writeSync(fd, `${JSON.stringify(me)}\n`);
    } finally {
      closeSync(fd);
    }
    held.add(dir);
    return () => {
      held.delete(dir);
      removeIfOurs(file);
    };
  }
}
