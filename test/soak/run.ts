/**
 * `npm run soak`: the whole stack (`l2stack dev --traffic`) under ten minutes of mixed traffic — token API
 * reads over distinct URLs, RPC reads, logs, filters made and polled and left to expire, batches, refused
 * hostile requests — while the devnet's own traffic keeps the relayer claiming both ways. It prints the
 * RSS of the `l2stack dev` process every 30 s (median of 2-s samples) and fails (exit 1) when the last
 * window's median is more than 10 % above the one at the end of warm-up. Not part of CI (it takes ~12 minutes).
 *
 * SOAK_MINUTES (10), SOAK_WARMUP_MINUTES (2), SOAK_CONCURRENCY (6), SOAK_HISTORY_HOURS (2) override;
 * SOAK_DB=memory keeps the embedded database in memory (default: on disk in a temporary directory).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DevnetState } from '../../src/devnet/state-file.js';
import { listedTokens, mixedTraffic } from './traffic.js';

const minutes = Number(process.env.SOAK_MINUTES ?? 10);
const warmupMinutes = Number(process.env.SOAK_WARMUP_MINUTES ?? 2);
const concurrency = Number(process.env.SOAK_CONCURRENCY ?? 6);
const historyHours = Number(process.env.SOAK_HISTORY_HOURS ?? 2);
const SAMPLE_MS = 30_000;

/**
 * A free port below Linux's ephemeral range (32768+), so a chain started on port 0 meanwhile cannot take it
 * between this check and the service's listen.
 */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return Math.round((kb / 1024) * 10) / 10;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'l2stack-soak-'));
  const stateFile = join(dir, 'devnet.json');
  const [tokenPort, rpcPort, apiPort, l1Port, l2Port] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LOG_LEVEL: 'warn',
    TOKEN_API_PORT: String(tokenPort),
    RPC_PORT: String(rpcPort),
    API_PORT: String(apiPort),
    // The soak measures memory under load, not the public rate limit.
    RPC_RATE_LIMIT_PER_SECOND: '0',
    TOKEN_API_RATE_LIMIT_PER_SECOND: '0',
    RPC_FILTER_TTL_SECONDS: '20',
  };
  delete env.DATABASE_HOST; // the embedded database lives in this process: its memory is part of the reading
  // On disk by default, as every service keeps it now: rows the chains and the relayer add are data, not a
  // leak, and would otherwise show up in this process's RSS. SOAK_DB=memory measures the in-memory setup.
  const dbArgs = process.env.SOAK_DB === 'memory' ? [] : ['--db-dir', join(dir, 'pglite')];
  const child = spawn(
    process.execPath,
    [
      'bin/l2stack.js',
      'dev',
      ...dbArgs,
      '--traffic',
      '--history-hours',
      String(historyHours),
      '--state-file',
      stateFile,
      '--l1-port',
      String(l1Port),
      '--l2-port',
      String(l2Port),
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => process.stderr.write(c));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const started = Date.now();
  while (!output.includes('l2stack dev ready')) {
    if (child.exitCode !== null) throw new Error(`l2stack dev exited ${child.exitCode} before ready:\n${output}`);
    if (Date.now() - started > 300_000) throw new Error(`l2stack dev not ready within 300 s:\n${output}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as DevnetState;
  console.log(
    `stack ready in ${((Date.now() - started) / 1000).toFixed(0)} s; soak ${minutes} min, warm-up ${warmupMinutes} min, ${concurrency} clients`,
  );

  const stop = new AbortController();
  const traffic = mixedTraffic(state, await listedTokens(state), concurrency, stop.signal);
  const t0 = Date.now();
  // RSS swings by tens of MiB with each major GC, so one reading says little: the process is sampled every
  // 2 s and each 30 s window is summarised by its median (min and max shown). The verdict compares the
  // median of the last window with that of the window that ends the warm-up.
  let warm: number | undefined;
  let last = NaN;
  for (let at = SAMPLE_MS; at <= minutes * 60_000; at += SAMPLE_MS) {
    const window: number[] = [];
    while (Date.now() < t0 + at) {
      await new Promise((r) => setTimeout(r, Math.min(2_000, t0 + at - Date.now())));
      if (child.exitCode !== null) throw new Error(`l2stack dev died during the soak (exit ${child.exitCode})`);
      window.push(rssMiB(child.pid!));
    }
    window.sort((a, b) => a - b);
    last = window[Math.floor(window.length / 2)] ?? NaN;
    const minute = at / 60_000;
    if (warm === undefined && minute >= warmupMinutes) warm = last;
    const counts = traffic.counts();
    console.log(
      `t=${minute.toFixed(1)} min  rss median ${last} MiB (min ${window[0]}, max ${window[window.length - 1]})` +
        `${warm !== undefined ? ` ${(((last - warm) / warm) * 100).toFixed(1)} % vs warm-up` : ' warming up'}  ` +
        `requests ${counts.ok} ok, ${counts.refused} refused as expected, ${counts.failed} failed`,
    );
  }
  stop.abort();
  await traffic.done;
  // The devnet's traffic sends a message each way every few seconds: the relayer must have kept claiming.
  const metrics = await (await fetch(`${state.services.relayerApi!}/metrics`)).text();
  const claimed = [
    ...metrics.matchAll(/^relayer_messages\{direction="([^"]+)",status="CLAIMED_SUCCESS"\} (\d+)/gm),
  ].map((m) => `${m[1]} ${m[2]}`);
  console.log(`relayer messages CLAIMED_SUCCESS during the soak: ${claimed.join(', ') || 'none'}`);
  child.kill('SIGTERM');
  const code = await exited;
  rmSync(dir, { recursive: true, force: true });

  const growth = warm === undefined ? NaN : ((last - warm) / warm) * 100;
  const counts = traffic.counts();
  console.log(
    `\nafter warm-up ${warm} MiB, at the end ${last} MiB: ${growth.toFixed(1)} %; l2stack dev exited ${code} on SIGTERM`,
  );
  console.log(`requests: ${counts.ok} ok, ${counts.refused} refused as expected, ${counts.failed} failed`);
  for (const [what, n] of traffic.failureKinds()) console.log(`  failed: ${n} × ${what}`);
  const ok = Number.isFinite(growth) && growth <= 10 && counts.failed === 0 && code === 0 && claimed.length > 0;
  console.log(ok ? 'soak passed' : 'soak FAILED');
  if (!ok) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
