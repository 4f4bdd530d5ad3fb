/**
 * `npm run bench -- relayer-start`: how soon the real `l2stack relayer` command (bin/l2stack.js, from this
 * checkout, its own OS process) claims a backlog sent before it starts. Each run sends N messages each way
 * (default 300; BENCH_MESSAGES overrides), waits until all are claimable, starts the command with the test
 * environment of test/e2e/relayer (200 ms listener intervals, one confirmation) on a database of its own, and
 * prints, counted from the spawn:
 *  - start → live: the first 200 of GET /health/live (the API listens);
 *  - a timeline from the process's own log times (CLI loaded = its first line, database opened, API started,
 *    directions started);
 *  - start → first claim: the earliest claim transaction signed and recorded (claim_tx_created_at);
 *  - claims/s from the start: 2N / (last claim receipt recorded − spawn);
 *  - the steady rate: claims / (last receipt − first claim signed), both directions together.
 * Times of claims are read from the relayer's database after it stopped (SIGTERM), so nothing polls it while it
 * claims except /metrics every 250 ms (to know when it is done).
 *
 * Runs: one on a fresh database (migrations included), then BENCH_START_ROUNDS (default 2) pairs on a database
 * migrated beforehand (a restart): one with the message history (issue 25 item 1) as shipped, one with its
 * writes switched off by a BEFORE INSERT trigger on message_status_history that drops every row, alternating
 * so load drifts hit both alike. The history's cost is 1 − median steady(on) / median steady(off), and, less
 * moved by the machine's load, the relayer's CPU per claim with it against without. The trigger itself costs a
 * PL/pgSQL call per history row, so both figures slightly understate the history's cost.
 * BENCH_START_CPU_PROF=<dir> runs every relayer process with --cpu-prof into that directory; BENCH_START_LOG=<file>
 * appends every process's output there (BENCH_START_LOG_LEVEL, default info); BENCH_START_FRESH=0 skips the fresh run.
 * With the history on, each run also prints when each direction first reached each status. A run that has not
 * resolved every claim after BENCH_START_DEADLINE_S (default 300) is stopped and its stall described (describeStall).
 * BENCH_START_COMPARE=<another checkout's bin/l2stack.js> (e.g. an older commit unpacked with `git archive`, its
 * node_modules linked to this one's) adds that command's fresh run and, each round, its restart with history,
 * interleaved with ours: a before/after under the same load. BENCH_START_COMPARE_ENV="NAME=value …" gives the
 * compared runs those variables too (alone, it compares this checkout with itself under them, e.g.
 * DATABASE_PGLITE_SHARED_BUFFERS_MB=128).
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadDatabaseConfig, type DatabaseConfig } from '../../src/common/db/config.js';
import { createDbClient, type DbClient } from '../../src/common/db/client.js';
import { migrate } from '../../src/common/db/migrations.js';
import { RELAYER_SCHEMA, relayerMigrations } from '../../src/relayer/index.js';
import { reservePort } from '../../src/devnet/anvil.js';
import { pooledRpc } from '../../src/common/chain/pool.js';
import { relayerEnv, startRelayerDevnet, testCommon, type RelayerDevnet } from '../e2e/relayer/harness.js';
import { loadavg } from './relayer-profile.js';
import { allAnchored, openBenchDb, retried, sendMany, sleep } from './_relayer-backlog.js';
import { L2STACK_BIN } from '../helpers/l2stack.js';

const N = Number(process.env.BENCH_MESSAGES ?? 300);
const ROUNDS = Number(process.env.BENCH_START_ROUNDS ?? 2);
const CPU_PROF = process.env.BENCH_START_CPU_PROF;
const LOG = process.env.BENCH_START_LOG;
const FRESH = process.env.BENCH_START_FRESH !== '0';
/** The sender of every run's backlog (a free test account; its nonce carries on from run to run). */
const SENDER = 10;
/** Log lines whose time the timeline prints (the last such line): [label, text the line contains]. */
const MARKS: [string, string][] = [
  ['CLI loaded', 'effective configuration'],
  ['database opened', 'database opened'],
  ['API started', 'relayer started'],
  ['directions started', 'direction started'],
];

const COMPARE_ENV: Record<string, string> = Object.fromEntries(
  (process.env.BENCH_START_COMPARE_ENV ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const COMPARE = process.env.BENCH_START_COMPARE ?? (Object.keys(COMPARE_ENV).length > 0 ? L2STACK_BIN : undefined);
/**
 * How long a run may take to resolve every claim (BENCH_START_DEADLINE_S, default 300) before it is stopped and the
 * stall described.
 */
const DEADLINE_MS = Number(process.env.BENCH_START_DEADLINE_S ?? 300) * 1_000;

/** The loops' intervals (both listeners); unset: the test settings' 200 ms. The relayer's default is 4000. */
const INTERVAL_MS = process.env.BENCH_START_INTERVAL_MS;

interface Variant {
  label: string;
  migrated: boolean;
  history: boolean;
  bin?: string;
  env?: Record<string, string>;
  compared?: boolean;
}
interface RunResult {
  variant: Variant;
  liveMs: number;
  firstClaimMs: number;
  lastMs: number;
  claims: number;
  fromStart: number;
  steady: number;
  marks: string;
  cpuToFirstClaimMs: number;
  cpuPerClaimMs: number;
}

/**
 * CPU time of process `pid` (user + system, ms), sampled every 20 ms from /proc while it runs, so the CPU spent
 * up to a moment known only afterwards (the first claim) can be read back: on a loaded machine the wall time
 * to the first claim mostly measures the wait for a core, the CPU time what the start costs.
 */
function cpuSampler(pid: number): { stop(): void; at(ms: number): number } {
  const samples: [number, number][] = [];
  const tick = () => {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      samples.push([Date.now(), ((Number(fields[11]) + Number(fields[12])) * 1000) / 100]);
    } catch {
      // gone
    }
  };
  const timer = setInterval(tick, 20);
  return { stop: () => clearInterval(timer), at: (t) => samples.find(([when]) => when >= t)?.[1] ?? NaN };
}

/**
 * A database of its own for one relayer process: a PGlite directory, or a fresh Postgres database when DATABASE_HOST is
 * set.
 */
async function runDatabase(
  admin: DbClient,
): Promise<{ env: Record<string, string>; config: DatabaseConfig; drop(): Promise<void> }> {
  if (admin.kind === 'postgres') {
    const name = `relayer_start_${randomBytes(4).toString('hex')}`;
    await admin.knex.raw(`create database ${name}`);
    const c = admin.config as { host: string; port: number; user?: string; password?: string };
    const env = {
      DATABASE_HOST: c.host,
      DATABASE_PORT: String(c.port),
      DATABASE_NAME: name,
      ...(c.user ? { DATABASE_USER: c.user } : {}),
      ...(c.password ? { DATABASE_PASSWORD: c.password } : {}),
    };
    return {
      env,
      config: loadDatabaseConfig(env),
      drop: async () => void (await admin.knex.raw(`drop database if exists ${name} with (force)`)),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'l2stack-relayer-start-'));
  const env = { DATABASE_PGLITE_DIR: dir };
  return { env, config: loadDatabaseConfig(env), drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Migrates the run's database as a previous run of the relayer would have; without history, adds the trigger that drops
 * its rows.
 */
async function prepare(config: DatabaseConfig, history: boolean): Promise<void> {
  const db = await createDbClient(config);
  try {
    await migrate(db.knex, RELAYER_SCHEMA, relayerMigrations);
    if (history) return;
    await db.knex.raw(
      `create function "${RELAYER_SCHEMA}".bench_no_history() returns trigger language plpgsql as $$ begin return null; end $$`,
    );
    await db.knex.raw(
      `create trigger bench_no_history before insert on "${RELAYER_SCHEMA}".message_status_history for each row execute function "${RELAYER_SCHEMA}".bench_no_history()`,
    );
  } finally {
    await db.close();
  }
}

async function metricSum(url: string, name: string): Promise<number> {
  try {
    const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
      .reduce((a, l) => a + Number(l.split(' ').at(-1)), 0);
  } catch {
    return 0;
  }
}

/** Sends the backlog, starts the command, waits until it resolved every claim, stops it; times from its database. */
async function run(d: RelayerDevnet, admin: DbClient, variant: Variant): Promise<RunResult> {
  const from = {
    l1: await retried(() => d.wallet(SENDER, 'l1').provider!.getBlockNumber()),
    l2: await retried(() => d.wallet(SENDER, 'l2').provider!.getBlockNumber()),
  };
  const [l1, l2] = await Promise.all([
    sendMany(d, d.wallet(SENDER, 'l1'), 'l1', N),
    sendMany(d, d.wallet(SENDER, 'l2'), 'l2', N),
  ]);
  await allAnchored(d, l1, l2);
  const database = await runDatabase(admin);
  try {
    if (variant.migrated) await prepare(database.config, variant.history);
    const port = await reservePort('127.0.0.1', 0, 'relayer API');
    const env = {
      PATH: process.env.PATH ?? '',
      API_PORT: String(port),
      LOG_LEVEL: process.env.BENCH_START_LOG_LEVEL ?? 'info',
      ...database.env,
      ...variant.env,
      ...relayerEnv(d, {
        L1_LISTENER_INITIAL_FROM_BLOCK: String(from.l1),
        L2_LISTENER_INITIAL_FROM_BLOCK: String(from.l2),
        ...(INTERVAL_MS ? { L1_LISTENER_INTERVAL: INTERVAL_MS, L2_LISTENER_INTERVAL: INTERVAL_MS } : {}),
      }),
    };
    const url = `http://127.0.0.1:${port}`;
    const lines: string[] = [];
    const load = loadavg();
    const spawned = Date.now();
    const child = spawn(
      process.execPath,
      [...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : []), variant.bin ?? L2STACK_BIN, 'relayer'],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const cpu = cpuSampler(child.pid!);
    for (const s of [child.stdout, child.stderr])
      s.on('data', (c: Buffer) => lines.push(...c.toString().split('\n').filter(Boolean)));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let liveMs = NaN;
    while (child.exitCode === null) {
      const ok = await fetch(`${url}/health/live`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) {
        liveMs = Date.now() - spawned;
        break;
      }
      await sleep(20);
    }
    const deadline = Date.now() + DEADLINE_MS;
    while (
      child.exitCode === null &&
      Date.now() < deadline &&
      (await metricSum(url, 'relayer_claims_resolved_total')) < 2 * N
    )
      await sleep(250);
    const stalled = (await metricSum(url, 'relayer_claims_resolved_total')) < 2 * N;
    child.kill('SIGTERM');
    const code = await exited;
    cpu.stop();
    if (LOG)
      appendFileSync(LOG, `# ${variant.label}, spawned at ${new Date(spawned).toISOString()}\n${lines.join('\n')}\n`);
    if (code !== 0) throw new Error(`the relayer exited ${code}:\n${lines.slice(-20).join('\n')}`);
    const marks = MARKS.map(([label, text]) => {
      const times = lines.filter((l) => l.includes(text)).map((l) => Date.parse(/"time":"([^"]+)"/.exec(l)?.[1] ?? ''));
      return `${label} ${times.length > 0 ? Math.max(...times) - spawned : NaN} ms`;
    }).join(', ');
    const db = await createDbClient(database.config);
    const rows = (await db.knex(`${RELAYER_SCHEMA}.message`).select('status', 'claim_tx_created_at', 'claimed_at')) as {
      status: string;
      claim_tx_created_at: Date | null;
      claimed_at: Date | null;
    }[];
    if (stalled) await describeStall(db, env);
    // When each direction first reached each status (the history's times): where the first round's time goes.
    const reached = variant.history
      ? (
          (await db.knex.raw(
            `select m.direction, h.status, min(h.at) as first from ${RELAYER_SCHEMA}.message_status_history h join ${RELAYER_SCHEMA}.message m on m.id = h.message_id group by 1, 2 order by 3`,
          )) as { rows: { direction: string; status: string; first: Date }[] }
        ).rows
      : [];
    await db.close();
    const t = (x: Date | null) => (x ? new Date(x).getTime() - spawned : NaN);
    const stages = reached
      .map((r) => `${r.direction === 'L1_TO_L2' ? 'L1→L2' : 'L2→L1'} ${r.status} ${t(r.first)} ms`)
      .join(', ');
    const claimed = rows.filter((r) => r.status === 'CLAIMED_SUCCESS');
    if (claimed.length < 2 * N) {
      const byStatus = new Map<string, number>();
      for (const r of rows) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
      console.log(`  not every message claimed at the stop: ${[...byStatus].map(([s, n]) => `${s} ${n}`).join(', ')}`);
    }
    const firstClaimMs = Math.min(...rows.map((r) => t(r.claim_tx_created_at)).filter(Number.isFinite));
    const lastMs = Math.max(...claimed.map((r) => t(r.claimed_at)).filter(Number.isFinite));
    const cpuToFirstClaimMs = cpu.at(spawned + firstClaimMs);
    // CPU per claim while claiming: what the steady rate costs the relayer's one thread, far less moved by the
    // machine's load than the rate itself.
    const cpuPerClaimMs = (cpu.at(spawned + lastMs) - cpuToFirstClaimMs) / claimed.length;
    const result = {
      variant,
      liveMs,
      firstClaimMs,
      lastMs,
      claims: claimed.length,
      fromStart: (1000 * claimed.length) / lastMs,
      steady: (1000 * claimed.length) / (lastMs - firstClaimMs),
      marks,
      cpuToFirstClaimMs,
      cpuPerClaimMs,
    };
    console.log(
      `${variant.label.padEnd(28)} start→live ${liveMs} ms, start→first claim ${firstClaimMs} ms (CPU ${cpuToFirstClaimMs} ms), last receipt ${lastMs} ms; ${claimed.length}/${2 * N} claimed; ` +
        `${result.fromStart.toFixed(1)} claims/s from the start, steady ${result.steady.toFixed(1)} claims/s (CPU ${cpuPerClaimMs.toFixed(2)} ms per claim); load average ${load}\n  timeline: ${marks}${stages ? `\n  first reached (message history): ${stages}` : ''}`,
    );
    return result;
  } finally {
    await database.drop();
  }
}

/**
 * What the destination node says of the lowest unmined claim of each direction when a run did not resolve every
 * claim in time: whether it knows the transaction, the signer's latest and pending nonces, its pool's counts.
 */
async function describeStall(db: DbClient, env: Record<string, string>): Promise<void> {
  const lowest = (await db
    .knex(`${RELAYER_SCHEMA}.message`)
    .where({ status: 'PENDING' })
    .select('direction', 'claim_tx_hash', 'claim_tx_nonce', 'claim_signer', 'claim_tx_created_at')
    .orderByRaw('claim_tx_nonce::bigint')) as {
    direction: string;
    claim_tx_hash: string;
    claim_tx_nonce: string;
    claim_signer: string;
    claim_tx_created_at: Date;
  }[];
  for (const direction of ['L1_TO_L2', 'L2_TO_L1']) {
    const pending = lowest.filter((r) => r.direction === direction);
    if (pending.length === 0) continue;
    const first = pending[0]!;
    const rpcUrl = direction === 'L1_TO_L2' ? env.L2_RPC_URL! : env.L1_RPC_URL!;
    const ask = async (method: string, params: unknown[]) => {
      try {
        return JSON.stringify(await pooledRpc(rpcUrl, method, params));
      } catch (err) {
        return `error: ${(err as Error).message}`;
      }
    };
    console.log(
      `  stalled ${direction}: ${pending.length} PENDING, lowest nonce ${first.claim_tx_nonce} (${first.claim_tx_hash}, recorded ${first.claim_tx_created_at.toISOString()}); ` +
        `node: transaction ${(await ask('eth_getTransactionByHash', [first.claim_tx_hash])).slice(0, 160)}, latest nonce ${await ask('eth_getTransactionCount', [first.claim_signer, 'latest'])}, ` +
        `pending nonce ${await ask('eth_getTransactionCount', [first.claim_signer, 'pending'])}, pool ${await ask('txpool_status', [])}`,
    );
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

function summarize(results: RunResult[], what: string): void {
  const of = (history: boolean) => results.filter((x) => x.variant.migrated && x.variant.history === history);
  const all = results.filter((x) => x.variant.history);
  const on = median(of(true).map((x) => x.steady));
  const off = of(false).length > 0 ? median(of(false).map((x) => x.steady)) : NaN;
  const cpuOn = median(of(true).map((x) => x.cpuPerClaimMs));
  const cpuOff = of(false).length > 0 ? median(of(false).map((x) => x.cpuPerClaimMs)) : NaN;
  const first = (xs: RunResult[]) =>
    xs.length > 0
      ? `${median(xs.map((x) => x.firstClaimMs))} ms (CPU ${median(xs.map((x) => x.cpuToFirstClaimMs))} ms)`
      : 'not run';
  console.log(
    `\nsummary (${N} each way, ${what}): start→live median ${median(all.map((x) => x.liveMs))} ms; start→first claim median: fresh database ${first(all.filter((x) => !x.variant.migrated))}, ` +
      `restart ${first(of(true))}; claims/s from the start median ${median(all.map((x) => x.fromStart)).toFixed(1)}; steady median ${on.toFixed(1)} claims/s with history` +
      (Number.isNaN(off)
        ? ''
        : `, ${off.toFixed(1)} without: the history costs ${(100 * (1 - on / off)).toFixed(1)} % of the steady rate`) +
      `; CPU per claim median ${cpuOn.toFixed(2)} ms with history` +
      (Number.isNaN(cpuOff)
        ? ''
        : `, ${cpuOff.toFixed(2)} without (the history: ${(100 * (cpuOn / cpuOff - 1)).toFixed(1)} % more CPU per claim)`) +
      `; load average ${loadavg()}`,
  );
}

export async function main(): Promise<void> {
  const db = await openBenchDb();
  const common = testCommon('warn');
  const d = await startRelayerDevnet(common, db.client, db.schema('bench_coordinator'), { blockTimeMs: 1_000 });
  try {
    console.log(
      `${N} messages each way sent before the relayer starts; database ${db.client.kind}; ${ROUNDS} rounds of history on/off; load average ${loadavg()}`,
    );
    const results: RunResult[] = [];
    const compared = (v: Variant): Variant[] =>
      COMPARE ? [v, { ...v, label: `compared: ${v.label}`, bin: COMPARE, env: COMPARE_ENV, compared: true }] : [v];
    if (FRESH)
      for (const v of compared({ label: 'fresh database', migrated: false, history: true }))
        results.push(await run(d, db.client, v));
    for (let r = 0; r < ROUNDS; r++) {
      for (const v of [
        ...compared({ label: 'restart, history on', migrated: true, history: true }),
        { label: 'restart, history off', migrated: true, history: false },
      ])
        results.push(await run(d, db.client, v));
    }
    summarize(
      results.filter((x) => !x.variant.compared),
      db.client.kind,
    );
    if (COMPARE)
      summarize(
        results.filter((x) => x.variant.compared),
        `${db.client.kind}, compared: ${COMPARE} ${process.env.BENCH_START_COMPARE_ENV ?? ''}`,
      );
  } finally {
    await d.stop();
    await db.close();
  }
}
