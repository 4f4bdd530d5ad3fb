import { spawn, type ChildProcess } from 'node:child_process';
import { recordProcess, type ProcessKind } from './orphans.js';

/**
 * The watchdog's program, run with `node -e` so it needs no loader and works the same from src/ and dist/.
 * It reads `+pid` / `-pid` lines on stdin; when stdin ends (its parent exited, or was killed, even by
 * SIGKILL: the kernel closes the parent's end of the pipe) it SIGKILLs every pid still registered.
 * Ctrl-C and a closed terminal signal the whole process group: the watchdog ignores them and leaves the
 * orderly stop to its parent, staying only as long as the parent does.
 */
const WATCHDOG_SOURCE = `
const pids = new Set();
let pending = '';
for (const s of ['SIGINT', 'SIGHUP']) process.on(s, () => {});
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  const lines = pending.split('\\n');
  pending = lines.pop();
  for (const line of lines) {
    const pid = Number(line.slice(1));
    if (!Number.isInteger(pid) || pid <= 0) continue;
    if (line[0] === '+') pids.add(pid); else pids.delete(pid);
  }
});
const reap = () => {
  for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch {} }
  process.exit(0);
};
process.stdin.on('end', reap);
process.stdin.on('error', reap);
process.stdin.on('close', reap);
`;

let watchdog: ChildProcess | undefined;
// An orderly exit has already stopped the children: the watchdog goes at once rather than a moment after
// its pipe closes, so "nothing left running" holds the instant this process has exited.
process.once('exit', () => watchdog?.kill('SIGKILL'));

function start(): ChildProcess {
  const child = spawn(process.execPath, ['-e', WATCHDOG_SOURCE], { stdio: ['pipe', 'ignore', 'ignore'] });
  // The watchdog must never keep its parent alive, nor take it down: a write after it died is ignored.
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  child.stdin!.on('error', () => undefined);
  child.once('exit', () => {
    if (watchdog === child) watchdog = undefined;
  });
  return child;
}

/**
 * Makes `child` die with this process: one watchdog process per parent (started on first use) kills every
 * guarded child that is still running when the parent goes away by any means, SIGKILL included, which no
 * handler inside the parent can catch. A child that exits is unregistered, so a reused pid is never hit.
 */
export function guardChild(child: ChildProcess): void {
  const pid = child.pid;
  if (pid === undefined) return;
  watchdog ??= start();
  const dog = watchdog;
  dog.stdin!.write(`+${pid}\n`);
  child.once('exit', () => {
    if (dog.exitCode === null && dog.stdin!.writable) dog.stdin!.write(`-${pid}\n`);
  });
}

const running = new Set<ChildProcess>();
// Whatever way this process ends (normal exit, uncaught error, signal handled elsewhere), no child outlives it.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * A devnet child (a chain, the bundler) that dies with this process by every means there is: killed at exit,
 * guarded by the watchdog against a SIGKILL of this process, and recorded in a pid file in `pidFile.dir` (when
 * set) for the next devnet on that directory to reap. Returns its stop: SIGTERM, then SIGKILL after 3 s.
 */
export function superviseChild(
  child: ChildProcess,
  pidFile: { dir: string | undefined; kind: ProcessKind; port: number },
): () => Promise<void> {
  running.add(child);
  child.once('exit', () => running.delete(child));
  guardChild(child);
  if (pidFile.dir && child.pid !== undefined)
    child.once('exit', recordProcess(pidFile.dir, pidFile.kind, child.pid, pidFile.port));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(timer);
  };
}
