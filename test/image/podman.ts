import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * podman as CI runs it (issue 25 item 5): every call bounded, so a stuck engine fails a test instead of holding
 * CI, with the settings these machines need (scripts/image-ci/containers.conf: runc, explicit ulimits) and
 * docker-format images (the OCI format drops HEALTHCHECK).
 */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const PODMAN_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  CONTAINERS_CONF: `${ROOT}scripts/image-ci/containers.conf`,
  BUILDAH_FORMAT: 'docker',
};

/** Why the image tests cannot run here, or undefined when they can. */
export function podmanMissing(): string | undefined {
  for (const tool of ['podman', 'podman-compose']) {
    const r = spawnSync(tool, ['--version'], { env: PODMAN_ENV, encoding: 'utf8', timeout: 30_000 });
    if (r.status !== 0) return `${tool} is not installed (Debian: apt-get install podman runc podman-compose)`;
  }
  return undefined;
}

export interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * podman without systemd (these machines) logs an error for each health-check timer it cannot create; the
 * checks still run on demand (`podman healthcheck run`), so those lines are noise in a failure message.
 */
const noise = /unable to get systemd connection|Removing timer for container/;
const clean = (text: string) =>
  text
    .split('\n')
    .filter((l) => !noise.test(l))
    .join('\n');

/**
 * Runs `cmd` to completion within `timeoutMs`; past it the process is killed and the promise rejects.
 * `combined`: standard error goes to `stdout` too, in the order written (podman-compose interleaves both).
 */
export function run(
  cmd: string,
  args: string[],
  options: { timeoutMs: number; env?: NodeJS.ProcessEnv; cwd?: string; combined?: boolean },
): Promise<Result> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: options.env ?? PODMAN_ENV,
      cwd: options.cwd ?? ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout = (stdout + c.toString()).slice(-200_000)));
    child.stderr.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-200_000);
      if (options.combined) stdout = (stdout + c.toString()).slice(-200_000);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `${cmd} ${args.join(' ')} did not finish within ${options.timeoutMs / 1_000} s:\n${clean(stderr).slice(-3_000)}`,
        ),
      );
    }, options.timeoutMs);
    child.on('error', (err) => (clearTimeout(timer), reject(err)));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr: clean(stderr), ms: Date.now() - started });
    });
  });
}

/** podman `args`, which must succeed; the error carries its output. */
export async function podman(args: string[], timeoutMs = 60_000): Promise<Result> {
  const r = await run('podman', args, { timeoutMs });
  if (r.code !== 0)
    throw new Error(`podman ${args.join(' ')} exited ${r.code}:\n${(r.stderr || r.stdout).slice(-3_000)}`);
  return r;
}

/** The npm cache of this machine (CI's `npm ci` just filled it), lent to `npm ci` inside the build. */
function npmCache(): string | undefined {
  const r = spawnSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8', timeout: 30_000 });
  const dir = r.stdout?.trim();
  return r.status === 0 && dir && existsSync(dir) ? dir : undefined;
}

/**
 * Builds one target of docker/Dockerfile as a user would (`FROM node:24-trixie-slim`), never pulling: the base is
 * whatever local image carries that name (CI's stand-in, scripts/image-ci/stand-ins.sh). Stages run two at
 * a time; unchanged layers come from podman's cache.
 */
export async function buildTarget(target: string, tag: string): Promise<Result> {
  const cache = npmCache();
  // A failed build must not leave an older image under the tag for the tests after it to run.
  await podman(['untag', tag], 60_000).catch(() => undefined);
  const args = [
    'build',
    '--format',
    'docker',
    '--pull=never',
    '--jobs',
    '2',
    ...(cache ? ['--volume', `${cache}:/root/.npm`] : []),
    '-f',
    'docker/Dockerfile',
    '--target',
    target,
    '-t',
    tag,
    '.',
  ];
  return podman(args, 600_000);
}

/** `podman inspect` of an image or a container, parsed. */
export async function inspect<T>(kind: 'image' | 'container', name: string): Promise<T> {
  const r = await podman([kind, 'inspect', name], 30_000);
  return (JSON.parse(r.stdout) as T[])[0]!;
}

/** Removes containers and volumes left by a test, whatever state they are in; never throws. */
export async function removeQuietly(containers: string[], volumes: string[] = []): Promise<void> {
  if (containers.length > 0)
    await run('podman', ['rm', '--force', '--time', '2', ...containers], { timeoutMs: 60_000 }).catch(() => undefined);
  if (volumes.length > 0)
    await run('podman', ['volume', 'rm', '--force', ...volumes], { timeoutMs: 60_000 }).catch(() => undefined);
}

/** Runs the container's HEALTHCHECK once (podman has no systemd timers here); true when it passed. */
export async function healthy(container: string): Promise<boolean> {
  const r = await run('podman', ['healthcheck', 'run', container], { timeoutMs: 30_000 });
  return r.code === 0;
}

/** Polls `probe` every `everyMs` until it is truthy; fails naming `what` (and the last detail) past `ms`. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms: number,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${ms / 1_000} s${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
