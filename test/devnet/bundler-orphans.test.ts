import { afterAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive, reapOrphanChains } from '../../src/devnet/orphans.js';

/**
 * The bundler's pid file (`bundler-<port>.pid`): when its devnet died with its watchdog, the next devnet on
 * the directory kills it, but only while the pid is still a bundler (`alto` on that port) on the command line.
 */
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A long-lived process whose command line reads like `node … <args>`. */
function lingering(...args: string[]): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', ...args], { stdio: 'ignore' });
  children.push(child);
  return child;
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((r) => child.once('exit', r));
  return child.pid!;
}

const exited = (child: ChildProcess) =>
  new Promise<string | null>((r) =>
    child.exitCode !== null || child.signalCode !== null ? r(child.signalCode) : child.once('exit', (_c, s) => r(s)),
  );

describe('bundler pid files', () => {
  it('behavior: a bundler whose devnet is gone is killed and its record removed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'l2s-bundler-orphan-'));
    const bundler = lingering('/x/node_modules/@pimlico/alto/esm/cli/alto.js', '--port', '40123');
    const file = join(dir, 'bundler-40123.pid');
    writeFileSync(file, `${JSON.stringify({ anvil: bundler.pid, parent: await deadPid(), port: 40123 })}\n`);
    expect(await reapOrphanChains(dir)).toEqual([{ pid: bundler.pid, port: 40123 }]);
    expect(await exited(bundler)).toBe('SIGKILL');
    expect(existsSync(file)).toBe(false);
  });

  it('behavior: a pid that is no longer a bundler on that port is left alone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'l2s-bundler-orphan-'));
    const other = lingering('/x/some-other-server.js', '--port', '40124');
    writeFileSync(
      join(dir, 'bundler-40124.pid'),
      `${JSON.stringify({ anvil: other.pid, parent: await deadPid(), port: 40124 })}\n`,
    );
    expect(await reapOrphanChains(dir)).toEqual([]);
    expect(isAlive(other.pid!)).toBe(true);
    expect(existsSync(join(dir, 'bundler-40124.pid'))).toBe(false);
  });

  it('behavior: a bundler whose devnet still runs is left alone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'l2s-bundler-orphan-'));
    const bundler = lingering('/x/alto.js', '--port', '40125');
    writeFileSync(
      join(dir, 'bundler-40125.pid'),
      `${JSON.stringify({ anvil: bundler.pid, parent: process.pid, port: 40125 })}\n`,
    );
    expect(await reapOrphanChains(dir)).toEqual([]);
    expect(isAlive(bundler.pid!)).toBe(true);
  });
});
