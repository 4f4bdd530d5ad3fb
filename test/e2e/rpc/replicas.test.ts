import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { ethers } from 'ethers';
import { databaseKind } from '../../helpers/db.js';
import { chain, deployOuter, result, wallet } from '../../rpc/helpers.js';
import type { Anvil } from '../../../src/devnet/anvil.js';
import { probeUws } from '../../../src/rpc/transport/uws/load.js';
import { mined } from '../../../src/common/chain/mined.js';
import { l2stackArgs } from '../../helpers/l2stack.js';

function runCli(env: Record<string, string | undefined>): {
  child: ChildProcess;
  url: Promise<string>;
  exit: Promise<{ code: number | null; stderr: string; stdout: string }>;
} {
  const child = spawn(process.execPath, l2stackArgs('rpc'), {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /l2stack rpc listening on (http:\/\/\S+)/.exec(stdout);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`l2stack rpc exited with ${code}: ${stderr.slice(-800)}`)));
  });
  url.catch(() => undefined);
  const exit = new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, stderr, stdout })),
  );
  return { child, url, exit };
}

/** `l2stack rpc` on the test's PostgreSQL database (the processes share it), without a rate limit. */
const sharedDatabaseEnv = (upstreamUrl: string): Record<string, string | undefined> => ({
  DATABASE_HOST: process.env.DATABASE_HOST,
  DATABASE_PORT: process.env.DATABASE_PORT,
  DATABASE_USER: process.env.DATABASE_USER,
  DATABASE_PASSWORD: process.env.DATABASE_PASSWORD,
  DATABASE_NAME: process.env.DATABASE_NAME,
  LOG_LEVEL: 'warn',
  RPC_PORT: '0',
  RPC_UPSTREAM_URLS: upstreamUrl,
  RPC_RATE_LIMIT_PER_SECOND: '0',
});
describe('l2stack rpc (the command)', () => {
  it('error: bad configuration exits non-zero listing every problem, before touching chain or database', async () => {
    const { exit } = runCli({ RPC_PORT: 'eighty', RPC_MAX_BATCH: '0', RPC_BUNDLER_VENDOR_PREFIX: 'Pimlico' });
    const { code, stderr } = await exit;
    expect(code).not.toBe(0);
    expect(stderr).toContain('RPC_UPSTREAM_URLS');
    expect(stderr).toContain('RPC_PORT');
    expect(stderr).toContain('RPC_MAX_BATCH');
    expect(stderr).toContain('RPC_BUNDLER_VENDOR_PREFIX');
  });

  it.skipIf(probeUws().ok)(
    'error: RPC_TRANSPORT=uws where uWebSockets.js cannot load exits non-zero naming what its build needs (the Node ABI, or the glibc it was linked against), before the database opens',
    async () => {
      // DATABASE_PGLITE_DIR that cannot be created: reaching the database would fail differently.
      const { exit } = runCli({
        RPC_TRANSPORT: 'uws',
        RPC_UPSTREAM_URLS: 'http://127.0.0.1:1',
        DATABASE_PGLITE_DIR: '/proc/l2stack-no-such-dir',
      });
      const { code, stderr } = await exit;
      expect(code).toBe(1);
      expect(stderr).toMatch(
        new RegExp(
          `Invalid configuration .*\\n.*RPC_TRANSPORT=uws cannot run here: (.*ABI ${process.versions.modules}\\b.*builds for Node ABI|its build uws_\\w+\\.node needs glibc >= [\\d.]+, this machine has glibc [\\d.]+)`,
          's',
        ),
      );
      expect(stderr).not.toMatch(/PGlite|database/i);
    },
  );
});

// Two processes can share a database only through a server: PGlite lives inside one process (the
// in-process replica tests in test/rpc/filters.test.ts cover PGlite).
const shared = databaseKind() === 'postgres';
if (!shared)
  console.log('test/e2e/rpc/replicas.test.ts: two processes need PostgreSQL (DATABASE_HOST); skipped on PGlite');

describe.skipIf(!shared)('two l2stack rpc processes on one database', () => {
  let anvil: Anvil;
  let provider: ethers.JsonRpcProvider;
  let outer: ethers.Contract;
  const procs: ReturnType<typeof runCli>[] = [];
  let urls: string[] = [];

  beforeAll(async () => {
    ({ anvil, provider } = await chain());
    outer = await deployOuter(wallet(0, provider));
    const env = sharedDatabaseEnv(anvil.url);
    procs.push(runCli(env), runCli(env));
    urls = await Promise.all(procs.map((p) => p.url));
  });

  afterAll(async () => {
    for (const p of procs) {
      p.child.kill('SIGTERM');
      const { code } = await p.exit;
      expect(code).toBe(0);
    }
    await anvil?.stop();
  });

  it('behavior: polls alternating between the two processes return every log exactly once', async () => {
    const address = await outer.getAddress();
    const start = await provider.getBlockNumber();
    const id = await result(urls[0]!, 'eth_newFilter', [{ address }]);
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) {
      const tx = (await outer.getFunction('note')(
        BigInt(i),
        ethers.id('replica'),
        BigInt((i % 3) + 1),
      )) as ethers.TransactionResponse;
      await mined(tx);
      const polls = await Promise.all([
        result(urls[i % 2]!, 'eth_getFilterChanges', [id]),
        result(urls[(i + 1) % 2]!, 'eth_getFilterChanges', [id]),
      ]);
      for (const logs of polls)
        for (const l of logs as { transactionHash: string; logIndex: string }[])
          seen.push(`${l.transactionHash}:${l.logIndex}`);
    }
    const truth = (await result(anvil.url, 'eth_getLogs', [
      { fromBlock: `0x${(start + 1).toString(16)}`, toBlock: 'latest', address },
    ])) as { transactionHash: string; logIndex: string }[];
    expect(seen.sort()).toEqual(truth.map((l) => `${l.transactionHash}:${l.logIndex}`).sort());
    expect(seen).toHaveLength(19); // 1+2+3+1+2+3+1+2+3+1
    expect(await result(urls[1]!, 'eth_uninstallFilter', [id])).toBe(true);
    // The other process remembered the filter (its empty polls skip the database): the uninstall reaches it
    // by NOTIFY, within milliseconds, and from then on it is "filter not found".
    let answer: { error?: { message: string } } = {};
    for (let i = 0; i < 100 && !answer.error; i++) {
      answer = (await (
        await fetch(urls[0]!, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getFilterChanges', params: [id] }),
        })
      ).json()) as typeof answer;
      if (!answer.error) await new Promise((r) => setTimeout(r, 20));
    }
    expect(answer.error?.message).toMatch(/^filter not found/);
    expect((await fetch(`${urls[0]!}/health/ready`)).status).toBe(200);
  });
});

/** One call on a connection of its own (no keep-alive): the cluster primary hands each to the next worker. */
async function freshCall(url: string, method: string, params: unknown[]): Promise<unknown> {
  const { request } = await import('node:http');
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close' } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve(body));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
  });
  const answer = JSON.parse(text) as { result?: unknown; error?: { message: string } };
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result;
}

describe('RPC_WORKERS (node:cluster)', () => {
  it('error: more than one worker on PGlite is refused with the config, before the database opens, naming the variable and what it needs', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const parent = mkdtempSync(join(tmpdir(), 'l2stack-rpc-workers-'));
    // PGlite creates its directory when it opens: still absent afterwards = refused before opening it.
    const dataDir = join(parent, 'pglite');
    try {
      const { exit } = runCli({
        RPC_WORKERS: '2',
        RPC_PORT: '0',
        RPC_UPSTREAM_URLS: 'http://127.0.0.1:9',
        DATABASE_PGLITE_DIR: dataDir,
        LOG_LEVEL: 'info',
      });
      const { code, stderr, stdout } = await exit;
      expect(code).not.toBe(0);
      expect(stderr).toContain('Invalid configuration');
      expect(stderr).toContain('RPC_WORKERS=2 needs PostgreSQL (DATABASE_HOST)');
      expect(stdout + stderr).not.toContain('database opened');
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('error: more than one worker with the in-memory rate limit is refused with the config, before connecting to PostgreSQL', async () => {
    // Nothing listens on port 9 (the pool connects lazily, so the lifecycle's "database opened" is the witness).
    const { exit } = runCli({
      RPC_WORKERS: '3',
      RPC_PORT: '0',
      RPC_UPSTREAM_URLS: 'http://127.0.0.1:9',
      DATABASE_HOST: '127.0.0.1',
      DATABASE_PORT: '9',
      RPC_RATE_LIMIT_PER_SECOND: '10',
      LOG_LEVEL: 'info',
    });
    const { code, stderr, stdout } = await exit;
    expect(code).not.toBe(0);
    expect(stderr).toContain('Invalid configuration');
    expect(stderr).toContain('RPC_WORKERS=3 with RPC_RATE_LIMIT_PER_SECOND=10 needs RPC_RATE_LIMIT_STORE=postgres');
    expect(stdout + stderr).not.toContain('database opened');
  });

  it.skipIf(!shared)(
    'behavior: two workers on PostgreSQL serve one port; polls spread over them return every log exactly once; SIGTERM stops them all',
    async () => {
      const { anvil, provider } = await chain();
      try {
        const outer = await deployOuter(wallet(0, provider));
        const address = await outer.getAddress();
        proc = runCli({ ...sharedDatabaseEnv(anvil.url), RPC_WORKERS: '2' });
        // The line is the primary's, printed once both workers listen.
        const url = await proc.url;
        const workers = childrenOf(proc.child.pid!);
        expect(workers).toHaveLength(2);
        const start = await provider.getBlockNumber();
        const id = await freshCall(url, 'eth_newFilter', [{ address }]);
        const seen: string[] = [];
        for (let i = 0; i < 6; i++) {
          const tx = (await outer.getFunction('note')(
            BigInt(i),
            ethers.id('workers'),
            BigInt((i % 3) + 1),
          )) as ethers.TransactionResponse;
          await mined(tx);
          // Four concurrent polls on four connections: both workers answer, only one may get each log.
          const polls = await Promise.all([0, 1, 2, 3].map(() => freshCall(url, 'eth_getFilterChanges', [id])));
          for (const logs of polls)
            for (const l of logs as { transactionHash: string; logIndex: string }[])
              seen.push(`${l.transactionHash}:${l.logIndex}`);
        }
        const truth = (await result(anvil.url, 'eth_getLogs', [
          { fromBlock: `0x${(start + 1).toString(16)}`, toBlock: 'latest', address },
        ])) as { transactionHash: string; logIndex: string }[];
        expect(seen).toHaveLength(12); // 1+2+3+1+2+3
        expect(seen.sort()).toEqual(truth.map((l) => `${l.transactionHash}:${l.logIndex}`).sort());
        proc.child.kill('SIGTERM');
        expect((await proc.exit).code).toBe(0);
        expect(workers.filter(exists)).toEqual([]);
      } finally {
        proc?.child.kill('SIGKILL');
        await anvil.stop();
      }
    },
  );

  it.skipIf(!shared)(
    'behavior: SIGTERM while the workers start stops and waits for them all (no orphan outlives the primary), exit 0',
    async () => {
      const { anvil } = await chain();
      try {
        proc = runCli({ ...sharedDatabaseEnv(anvil.url), RPC_WORKERS: '2' });
        const pid = proc.child.pid!;
        // Both forked, neither listening yet (a worker takes a second or more to load and open its database).
        const deadline = Date.now() + 60_000;
        let workers: number[] = [];
        while ((workers = childrenOf(pid)).length < 2) {
          if (Date.now() > deadline) throw new Error(`the primary forked ${workers.length} of 2 workers in 60 s`);
          await new Promise((r) => setTimeout(r, 5));
        }
        proc.child.kill('SIGTERM');
        const { code, stdout } = await proc.exit;
        expect(stdout).not.toContain('l2stack rpc listening');
        expect(code).toBe(0);
        // A zombie still has its /proc entry: gone means the primary waited for and reaped it.
        expect(workers.filter(exists)).toEqual([]);
      } finally {
        proc?.child.kill('SIGKILL');
        await anvil.stop();
      }
    },
  );
});

let proc: ReturnType<typeof runCli> | undefined;

/** The `l2stack` children of `pid`'s main thread (node:cluster forks from it), not a passing esbuild service. */
const childrenOf = (pid: number): number[] =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
    .split(' ')
    .filter(Boolean)
    .map(Number)
    .filter((child) => {
      try {
        return readFileSync(`/proc/${child}/cmdline`, 'utf8').includes('l2stack.js');
      } catch {
        return false;
      }
    });

/** Whether `pid` has a process entry, a zombie included (this machine's PID 1 reaps no orphan). */
const exists = (pid: number): boolean => existsSync(`/proc/${pid}`);
