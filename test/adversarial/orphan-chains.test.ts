import { describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newMarker, processesWithMarker } from '../helpers/processes.js';
import type { DevnetState } from '../../src/devnet/state-file.js';
import { l2stackArgs } from '../helpers/l2stack.js';
import { waitFor } from '../helpers/chain.js';

/**
 * Issue 18, recipe 5: SIGKILL of `l2stack devnet` (the same code starts the chains of `l2stack dev`) used
 * to leave both anvil chains running, orphaned on their ports. The watchdog takes them down with the
 * parent; when the watchdog is killed too, the next devnet on the same state directory reaps them.
 */

interface Started {
  child: ChildProcess;
  state: DevnetState;
  output: () => string;
  exited: Promise<number | null>;
}

/** `l2stack devnet` without history, on free ports, in memory, with `marker` on it and every child. */
async function startDevnet(
  stateFile: string,
  marker: { name: string; value: string },
  extra: string[] = [],
): Promise<Started> {
  const child = spawn(
    process.execPath,
    l2stackArgs('devnet', '--history-hours', '0', '--state-file', stateFile, ...extra),
    {
      env: {
        ...process.env,
        [marker.name]: marker.value,
        LOG_LEVEL: 'warn',
        DATABASE_HOST: '',
        DATABASE_PGLITE_DIR: 'memory://',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await until(
    'l2stack devnet ready',
    () => {
      if (child.exitCode !== null) throw new Error(`l2stack devnet exited with ${child.exitCode}:\n${out}`);
      return out.includes('l2stack devnet ready');
    },
    150_000,
  );
  return { child, state: JSON.parse(readFileSync(stateFile, 'utf8')) as DevnetState, output: () => out, exited };
}

const until = (what: string, check: () => boolean | Promise<boolean>, timeoutMs: number) =>
  waitFor(what, check, timeoutMs, 100);

const accepts = (url: string) =>
  new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** Pids of anvil processes carrying `marker`. */
const anvils = (marker: { name: string; value: string }) =>
  processesWithMarker(marker).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')[0]!.endsWith('anvil');
    } catch {
      return false;
    }
  });

describe('orphan chains', () => {
  it(
    'behavior: SIGKILL of `l2stack devnet` takes both chains down: their ports close and no process of the devnet is left',
    { timeout: 200_000 },
    async () => {
      const marker = newMarker();
      const d = await startDevnet(join(mkdtempSync(join(tmpdir(), 'l2s-orphan-')), 'devnet.json'), marker);
      const urls = [d.state.l1.rpcUrl, d.state.l2.rpcUrl];
      try {
        for (const url of urls) expect(await accepts(url)).toBe(true);
        expect(anvils(marker)).toHaveLength(2);
        d.child.kill('SIGKILL');
        await d.exited;
        await until(
          'both chain ports to close',
          async () => !(await accepts(urls[0]!)) && !(await accepts(urls[1]!)),
          20_000,
        );
        await until(
          'every process of the devnet (chains, watchdog) to be gone',
          () => processesWithMarker(marker).length === 0,
          10_000,
        );
      } finally {
        for (const pid of processesWithMarker(marker)) process.kill(pid, 'SIGKILL');
      }
    },
  );

  it(
    'behavior: chains orphaned with their watchdog are stopped by the next devnet on the same state directory',
    { timeout: 360_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'l2s-orphan-'));
      const first = newMarker();
      const second = newMarker();
      try {
        const d = await startDevnet(join(dir, 'devnet.json'), first);
        const orphans = anvils(first);
        expect(orphans).toHaveLength(2);
        expect(readdirSync(dir).filter((f) => f.startsWith('anvil-'))).toHaveLength(2);
        // Everything but the chains dies, as with `kill -9` of the parent and its watchdog: the watchdog
        // first, so it cannot see its parent go.
        for (const pid of processesWithMarker(first))
          if (!orphans.includes(pid) && pid !== d.child.pid) process.kill(pid, 'SIGKILL');
        d.child.kill('SIGKILL');
        await d.exited;
        await new Promise((r) => setTimeout(r, 500));
        expect(anvils(first).sort()).toEqual([...orphans].sort());
        const l1Port = new URL(d.state.l1.rpcUrl).port;

        // The orphaned L1 port is asked for explicitly: it is free again by the time ports are checked.
        const next = await startDevnet(join(dir, 'devnet.json'), second, ['--l1-port', l1Port]);
        expect(next.output()).toContain('stopped chains left running by an earlier devnet');
        expect(anvils(first)).toEqual([]);
        expect(new URL(next.state.l1.rpcUrl).port).toBe(l1Port);
        next.child.kill('SIGINT');
        expect(await next.exited).toBe(0);
        await until(
          'every process of the second devnet to be gone',
          () => processesWithMarker(second).length === 0,
          10_000,
        );
        expect(readdirSync(dir).filter((f) => f.startsWith('anvil-'))).toEqual([]);
      } finally {
        for (const pid of [...processesWithMarker(first), ...processesWithMarker(second)]) process.kill(pid, 'SIGKILL');
      }
    },
  );
});
