/**
 * `npm run bench -- state`, two parts (BENCH_STATE_PARTS=backfill,build selects them):
 *
 * - backfill: starts the devnet chains with their generated history (BENCH_STATE_HISTORY_HOURS, default 26
 *   as `l2stack dev`) and ingests every L2 block from genesis into the in-memory store (baseline), PGlite and
 *   Postgres, once with one transaction per block (how the state manager worked before it batched) and once
 *   batched. Prints blocks/s and the ratio to the in-memory store. Blocks are read by parity replay, as the
 *   devnet's state manager reads them; BENCH_STATE_TRACES=trace_replayBlockTransactions,debug_traceBlockByHash
 *   compares it with the prestateTracer (the chain holds still here, so anvil's trace/mine deadlock cannot occur).
 * - dev: runs `node bin/l2stack.js dev` (embedded PGlite, default 26 h of history) and measures, from its
 *   "l2stack dev ready" line, how long until svc_getProof answers at the finalized block and until an L2→L1
 *   message sent at that moment is claimed on L1 by the relayer.
 * - build: builds one 100,000-leaf state tree (an account's storage, 1,000 new random slots per block) on the
 *   in-memory store (the baseline), on PGlite and on Postgres (127.0.0.1:5432, user postgres, database test, when
 *   reachable), then measures svc_getProof's latency for a slot on the finished tree. Prints leaves/s, p50/p99 and each
 *   database's ratio to the in-memory figures. BENCH_STATE_LEAVES scales the tree.
 */
import { randomBytes } from 'node:crypto';
import { Session } from 'node:inspector';
import { connect } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Wallet, parseEther } from 'ethers';
import { L2MessageService__factory } from '../../generated/contracts/types/index.js';
import { ROLES } from '../../src/devnet/accounts.js';
import type { DevnetState } from '../../src/devnet/state-file.js';
import { createDbClient, type DbClient } from '../../src/common/db/client.js';
import { migrate } from '../../src/common/db/migrations.js';
import { toHex } from '../../src/state/bytes.js';
import { treeConstants } from '../../src/state/encoding.js';
import type { StateHash } from '../../src/state/config.js';
import { hashProviderOf } from '../../src/state/state-hash.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { stateMigrations } from '../../src/state/migrations.js';
import { PgStore } from '../../src/state/pg-store.js';
import { StagedStore, type BatchingStore } from '../../src/state/staged-store.js';
import type { VersionedStore } from '../../src/state/store.js';
import { verifyStateProof } from '../../src/state/verify.js';
import { createProofBackend } from '../../src/state/proof-backend.js';
import { createCommon } from '../../src/common/kernel.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { createMetrics } from '../../src/common/metrics.js';
import { startDevnet } from '../../src/devnet/devnet.js';
import type { TraceMethod } from '../../src/state/config.js';
import { Ingestor } from '../../src/state/ingest.js';
import { createJsonRpcCaller } from '../../src/state/rpc-client.js';
import { WorldState, type StateProofJson } from '../../src/state/state.js';
import { mined } from '../../src/common/chain/mined.js';
import { L2STACK_BIN } from '../helpers/l2stack.js';

const LEAVES = Number(process.env.BENCH_STATE_LEAVES ?? 100_000);
const PER_BLOCK = Number(process.env.BENCH_STATE_PER_BLOCK ?? 1_000);
const PROOFS = Number(process.env.BENCH_STATE_PROOFS ?? 500);
const TREE = '0x00000000000000000000000000000000000000be';
// BENCH_STATE_HASHES=keccak,poseidon2: every part runs once per tree hash (STATE_HASH), in this order.
const HASHES = (process.env.BENCH_STATE_HASHES ?? 'keccak').split(',') as StateHash[];
let c = treeConstants(hashProviderOf(HASHES[0]!));

interface Result {
  name: string;
  leavesPerSecond: number;
  buildSeconds: number;
  p50: number;
  p99: number;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** Same keys and values for every store, so every run builds the identical tree. */
const keys = Array.from({ length: LEAVES }, () => toHex(randomBytes(32)));
const values = Array.from({ length: LEAVES }, (_, i) => {
  const v = new Uint8Array(32);
  new DataView(v.buffer).setUint32(28, i + 1);
  return v;
});
const probes = Array.from({ length: PROOFS }, (_, i) =>
  i % 2 === 0 ? keys[Math.floor(Math.random() * LEAVES)]! : toHex(randomBytes(32)),
);

async function run(name: string, store: VersionedStore, ingestPath = false): Promise<Result & { root: string }> {
  // The ingest path: what the state manager does per block (check the head, apply through the staged store, write).
  const staged = ingestPath ? new StagedStore(store as BatchingStore) : undefined;
  const started = performance.now();
  let root = '';
  let block = 0n;
  // One account (TREE) whose storage gets PER_BLOCK new slots a block: its storage tree is the tree measured.
  const world = new WorldState(staged ?? store, c.hasher);
  for (let i = 0; i < LEAVES; i += PER_BLOCK, block++) {
    const storage = new Map<string, Uint8Array>();
    for (let j = i; j < Math.min(i + PER_BLOCK, LEAVES); j++) storage.set(keys[j]!, values[j]!);
    if (staged) await staged.sync();
    const header = { number: block, hash: `0x${block.toString(16)}`, parentHash: '0x' };
    root = await world.applyBlock(header, [{ address: TREE, deleted: false, storage }]);
    await staged?.flush();
    if (block % 20n === 19n)
      process.stdout.write(
        `  ${name}: ${i + PER_BLOCK} leaves, ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
      );
  }
  const buildSeconds = (performance.now() - started) / 1000;
  const head = block - 1n;
  const statement = new WorldState(store, c.hasher);
  const { p50, p99 } = await measureProofs(name, (k) => statement.getProof(TREE, [k], head), root, probes);
  return { name, root, buildSeconds, leavesPerSecond: LEAVES / buildSeconds, p50, p99 };
}

/**
 * Latency of svc_getProof(TREE, [key]) at the head (settled, as svc_getProof reads): p50/p99 in ms and this process's
 * CPU per proof (on PGlite that includes the database itself; on Postgres only the client side). Every proof must
 * verify (a benchmark of wrong answers would mean nothing): `checked` proofs come from svc_getProof's backend, which
 * verifies each answer against the block's root before it leaves (that check is timed); the others are verified
 * here, untimed.
 */
async function measureProofs(
  name: string,
  prove: (key: string) => Promise<StateProofJson>,
  root: string,
  keysToProve: readonly string[],
  checked = false,
) {
  const times: number[] = [];
  const cpu = process.cpuUsage();
  for (const probe of keysToProve) {
    const t = performance.now();
    const p = await prove(probe);
    times.push(performance.now() - t);
    if (!checked && !verifyStateProof(root, p, c.hasher).ok) throw new Error(`${name}: a proof does not verify`);
  }
  const used = process.cpuUsage(cpu);
  times.sort((a, b) => a - b);
  return {
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    cpuMsPerProof: (used.user + used.system) / 1000 / keysToProve.length,
  };
}

/**
 * The proof paths compared on one tree in one run, in alternating rounds (so the load hits both alike):
 * "statement" (what svc_getProof does: PgStore.proofReads, one statement) and "stepwise" (the store's
 * read transaction, a statement per step, with its settled-row cache: the path before the statement).
 */
async function compareProofPaths(name: string, store: VersionedStore, head: bigint, root: string): Promise<void> {
  const stepwise = Object.create(store, { proofReads: { value: undefined } }) as VersionedStore;
  const world = new WorldState(store, c.hasher);
  const backend = createProofBackend(world, {
    latestFinalized: () => head,
    ingestedHead: () => head,
    retainedFinalizedBlocks: Number(head) + 1,
    metrics: createMetrics({ defaultMetrics: false }),
  });
  const paths = {
    stepwise: (k: string) => new WorldState(stepwise, c.hasher).getProof(TREE, [k], head),
    statement: (k: string) => world.getProof(TREE, [k], head),
    checked: (k: string) => backend.getProof(TREE, [k], head),
  };
  const rounds = Number(process.env.BENCH_STATE_PROOF_ROUNDS ?? 4);
  const per = Math.ceil(probes.length / rounds);
  type Measured = Awaited<ReturnType<typeof measureProofs>>;
  // "checked": svc_getProof's backend (the statement path, then the check it makes before answering).
  const acc = { statement: [] as Measured[], checked: [] as Measured[], stepwise: [] as Measured[] };
  for (let r = 0; r < rounds; r++) {
    const slice = probes.slice(r * per, (r + 1) * per);
    if (slice.length === 0) break;
    for (const path of ['stepwise', 'statement', 'checked'] as const)
      acc[path].push(await measureProofs(name, paths[path], root, slice, path === 'checked'));
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  // BENCH_STATE_PROOF_PROFILE=dir: a CPU profile of each path's proofs (one more pass) as
  // dir/<store>-<path>.cpuprofile.
  const profileDir = process.env.BENCH_STATE_PROOF_PROFILE;
  if (profileDir) {
    for (const path of ['stepwise', 'statement', 'checked'] as const) {
      const file = join(profileDir, `${name}-${path}.cpuprofile`);
      await profiled(file, () => measureProofs(name, paths[path], root, probes, path === 'checked'));
      process.stdout.write(`  ${name} ${path}: profile of ${probes.length} proofs in ${file}\n`);
    }
  }
  for (const [path, ms] of Object.entries(acc)) {
    process.stdout.write(
      `  ${name} ${path.padEnd(9)}: p50 ${mean(ms.map((m) => m.p50)).toFixed(2)} ms, p99 ${mean(ms.map((m) => m.p99)).toFixed(2)} ms, CPU ${mean(ms.map((m) => m.cpuMsPerProof)).toFixed(2)} ms/proof (mean of ${ms.length} rounds; load ${loadavg()[0]!.toFixed(2)})\n`,
    );
  }
}

async function postgresReachable(): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(5432, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

async function dbStore(client: DbClient): Promise<{ store: PgStore; drop: () => Promise<void> }> {
  const schema = `bench_state_${randomBytes(3).toString('hex')}`;
  await migrate(client.knex, schema, stateMigrations);
  return {
    store: new PgStore(client, schema),
    drop: async () => void (await client.knex.raw('drop schema if exists ?? cascade', [schema])),
  };
}

const PARTS = (process.env.BENCH_STATE_PARTS ?? 'backfill,build,dev').split(',');
/** Which stores the backfill runs on (memory is the baseline of its ratios), and its blocks per transaction. */
const STORES = (process.env.BENCH_STATE_STORES ?? 'memory,pglite,postgres').split(',');
const MODES = (process.env.BENCH_STATE_MODES ?? '1,100').split(',').map(Number);
const HISTORY_HOURS = Number(process.env.BENCH_STATE_HISTORY_HOURS ?? 26);
/**
 * How the backfill reads each block: the devnet's parity replay, or (comma-separated, to compare) the prestateTracer.
 */
const TRACES = (process.env.BENCH_STATE_TRACES ?? 'trace_replayBlockTransactions').split(',') as TraceMethod[];

/** Opens each store kind in turn (Postgres only when reachable) and hands it to `use`. */
async function eachStore(use: (name: string, store: VersionedStore) => Promise<void>): Promise<void> {
  if (STORES.includes('memory')) await use('memory', new MemoryStore());
  if (STORES.includes('pglite')) {
    const pglite = await createDbClient({ kind: 'pglite', dataDir: undefined });
    try {
      await use('pglite', (await dbStore(pglite)).store);
    } finally {
      await pglite.close();
    }
  }
  if (!STORES.includes('postgres')) return;
  if (!(await postgresReachable())) {
    process.stdout.write('postgres: 127.0.0.1:5432 not reachable, skipped\n');
    return;
  }
  const pg = await createDbClient({
    kind: 'postgres',
    host: '127.0.0.1',
    port: 5432,
    database: 'test',
    user: 'postgres',
    password: undefined,
    ssl: undefined,
  });
  try {
    const { store, drop } = await dbStore(pg);
    try {
      await use('postgres', store);
    } finally {
      await drop();
    }
  } finally {
    await pg.close();
  }
}

/** Ingests the devnet's L2 history from genesis, per block and batched, on every store. */
async function backfill(): Promise<void> {
  const common = createCommon({ level: 'silent' });
  const devDb = await createDbClient({ kind: 'pglite', dataDir: undefined });
  const started = performance.now();
  // No coordinator, and no empty blocks while measuring: the chain holds still at the end of its history.
  const devnet = await startDevnet({
    common,
    db: devDb,
    options: { historyHours: HISTORY_HOURS, coordinator: false, blockTimeMs: 1_000_000_000 },
  });
  const l2 = createProvider(devnet.state.l2.upstreamRpcUrl, devnet.state.l2.chainId);
  // As the state manager runs it: headers and traces through the lean JSON-RPC client (BENCH_STATE_RPC=ethers: through
  // ethers).
  const rpc =
    process.env.BENCH_STATE_RPC === 'ethers' ? undefined : createJsonRpcCaller(devnet.state.l2.upstreamRpcUrl);
  try {
    const target = BigInt(await l2.getBlockNumber());
    process.stdout.write(
      `backfill: devnet with ${HISTORY_HOURS} h of history, ${target + 1n} L2 blocks (started in ${((performance.now() - started) / 1000).toFixed(1)} s)\n`,
    );
    const rows: { name: string; mode: string; trace: TraceMethod; seconds: number; root: string; hash: StateHash }[] =
      [];
    for (const hash of HASHES)
      for (const trace of TRACES)
        for (const perTx of MODES) {
          await eachStore(async (name, store) => {
            const world = new WorldState(store, hashProviderOf(hash));
            const ingestor = new Ingestor(world, l2, common.logger, createMetrics(), {
              maxBlocksPerStep: 100,
              blocksPerTransaction: perTx,
              genesisAccounts: devnet.state.accounts.map((a) => a.address.toLowerCase()),
              finalized: () => undefined,
              rpc,
              traceMethod: trace,
            });
            const t = performance.now();
            while (((await store.head())?.number ?? -1n) < target) await ingestor.step();
            const seconds = (performance.now() - t) / 1000;
            const root = (await store.block(target))!.root;
            rows.push({ name, mode: perTx === 1 ? 'per block' : `batched ≤${perTx}`, trace, seconds, root, hash });
            process.stdout.write(
              `  ${hash} ${name} (${perTx === 1 ? 'one transaction per block' : `up to ${perTx} blocks per transaction`}, ${trace}): ${seconds.toFixed(2)} s\n`,
            );
          });
        }
    if (new Set(rows.map((r) => `${r.hash} ${r.root}`)).size !== HASHES.length)
      throw new Error(
        `stores disagree on the root: ${rows.map((r) => `${r.hash} ${r.name} ${r.mode} ${r.trace} ${r.root}`).join(', ')}`,
      );
    const blocks = Number(target + 1n);
    for (const h of HASHES)
      process.stdout.write(
        `\n${h} root at block ${target}: ${rows.find((r) => r.hash === h)!.root} (identical on every store, mode and trace method)`,
      );
    process.stdout.write(
      '\nhash       store      mode          trace                                s   blocks/s   vs memory (same hash, mode and trace)\n',
    );
    for (const r of rows) {
      const base = rows.find(
        (b) => b.name === 'memory' && b.mode === r.mode && b.trace === r.trace && b.hash === r.hash,
      );
      const ratio = base ? `${(base.seconds / r.seconds).toFixed(3)}x` : 'n/a';
      process.stdout.write(
        `${r.hash.padEnd(9)}  ${r.name.padEnd(9)}  ${r.mode.padEnd(13)} ${r.trace.padEnd(30)} ${r.seconds.toFixed(2).padStart(6)} ${(blocks / r.seconds).toFixed(1).padStart(10)} ${ratio.padStart(11)}\n`,
      );
    }
  } finally {
    l2.destroy();
    await devnet.stop();
    await devDb.close();
  }
}

export async function main(): Promise<void> {
  process.stdout.write(
    `machine load (1/5/15 min): ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}, ${cpus().length} cores\n`,
  );
  if (PARTS.includes('backfill')) await backfill();
  if (PARTS.includes('build')) await build();
  if (PARTS.includes('dev')) await devReady();
  if (PARTS.includes('proof')) await proofPaths();
  process.stdout.write(
    `machine load after (1/5/15 min): ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
}

/**
 * Build modes: straight on the store, or through the state manager's write path (StagedStore, one transaction per
 * block).
 */
const BUILD_MODES = (process.env.BENCH_STATE_BUILD_MODES ?? 'direct,ingest-path').split(',');

async function build(): Promise<void> {
  for (const hash of HASHES) await buildWith(hash);
}

async function buildWith(hash: StateHash): Promise<void> {
  c = treeConstants(hashProviderOf(hash));
  process.stdout.write(
    `state tree (${hash}): ${LEAVES} leaves, ${PER_BLOCK} per block, ${PROOFS} proofs (half present, half absent)\n`,
  );
  const results: (Result & { root: string })[] = [];
  results.push(await run('memory', new MemoryStore()));
  for (const mode of BUILD_MODES) {
    await eachStore(async (name, store) => {
      if (name === 'memory') return;
      results.push(await run(`${name} ${mode}`, store, mode === 'ingest-path'));
    });
  }

  if (new Set(results.map((r) => r.root)).size !== 1)
    throw new Error(`stores disagree on the root: ${results.map((r) => `${r.name} ${r.root}`).join(', ')}`);
  const base = results[0]!;
  process.stdout.write(`\nroot ${base.root} (identical on every store)\n`);
  process.stdout.write(
    'store                 build s   leaves/s   vs memory   proof p50 ms   p99 ms   p50 vs memory\n',
  );
  for (const r of results) {
    process.stdout.write(
      `${r.name.padEnd(20)} ${r.buildSeconds.toFixed(1).padStart(8)} ${Math.round(r.leavesPerSecond).toString().padStart(10)} ${(r.leavesPerSecond / base.leavesPerSecond).toFixed(3).padStart(10)}x ${r.p50.toFixed(2).padStart(13)} ${r.p99.toFixed(2).padStart(8)} ${(r.p50 / base.p50).toFixed(1).padStart(13)}x\n`,
    );
  }
}

/** Runs `fn` under the V8 CPU profiler and writes the profile to `file`. */
async function profiled<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const session = new Session();
  session.connect();
  const post = (method: string) =>
    new Promise<unknown>((resolve, reject) => session.post(method, (err, res) => (err ? reject(err) : resolve(res))));
  await post('Profiler.enable');
  await post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = (await post('Profiler.stop')) as { profile: unknown };
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  }
}

/** BENCH_STATE_PARTS=proof: builds the tree straight on each database store, then compares the proof paths on it. */
async function proofPaths(): Promise<void> {
  for (const hash of HASHES) {
    c = treeConstants(hashProviderOf(hash));
    process.stdout.write(`proof paths (${hash}): ${LEAVES}-leaf tree, ${PROOFS} proofs (half present, half absent)\n`);
    await eachStore(proofPathsOn);
  }
}

async function proofPathsOn(name: string, store: VersionedStore): Promise<void> {
  if (name === 'memory') return;
  const built = await run(name, store);
  process.stdout.write(`  ${name}: built in ${built.buildSeconds.toFixed(1)} s\n`);
  await compareProofPaths(name, store, BigInt(Math.ceil(LEAVES / PER_BLOCK)) - 1n, built.root);
}

/** Seconds from `l2stack dev ready` until svc_getProof serves and an L2→L1 message is claimed. */
async function devReady(): Promise<void> {
  const file = join(mkdtempSync(join(tmpdir(), 'l2s-bench-')), 'devnet.json');
  const child = spawn(process.execPath, [L2STACK_BIN, 'dev', '--state-file', file], {
    env: {
      ...process.env,
      LOG_LEVEL: process.env.BENCH_STATE_DEV_LOG_LEVEL ?? 'warn',
      DATABASE_HOST: '',
      TOKEN_API_PORT: '0',
      RPC_PORT: '0',
      API_PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const poll = async <T>(what: string, fn: () => Promise<T | undefined>, limitS: number): Promise<T> => {
    const deadline = Date.now() + limitS * 1000;
    for (;;) {
      const v = await fn().catch(() => undefined);
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`dev: ${what} did not happen within ${limitS} s\n${out.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  try {
    const startedAt = performance.now();
    await poll('"l2stack dev ready"', async () => (out.includes('l2stack dev ready') ? true : undefined), 600);
    const ready = performance.now();
    process.stdout.write(`dev: \`l2stack dev\` ready in ${((ready - startedAt) / 1000).toFixed(1)} s\n`);
    const state = JSON.parse(readFileSync(file, 'utf8')) as DevnetState;
    const rpc = async (method: string, params: unknown[]) =>
      (await (
        await fetch(state.services.rpc!, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        })
      ).json()) as { result?: unknown; error?: { code: number; message?: string } };
    // What svc_getProof answered until it served (each distinct answer once, with its time after ready): says what it
    // waited for.
    const answers: string[] = [];
    // Sent in this process, as `l2stack devnet send-message --from l2` does (the CLI's own start-up under load is not
    // the stack's).
    const l2 = createProvider(state.l2.upstreamRpcUrl, state.l2.chainId, { pollingInterval: 100 });
    const sender = L2MessageService__factory.connect(
      state.l2.messageService,
      new Wallet(state.accounts[ROLES.user]!.privateKey, l2),
    );
    const sending = (async () => {
      const fee = parseEther('0.0001');
      const tx = await sender.sendMessage(state.accounts[ROLES.user]!.address, fee, '0x', {
        value: parseEther('0.001') + fee,
      });
      const receipt = await mined(tx);
      const event = receipt?.logs.map((l) => sender.interface.parseLog(l)).find((e) => e?.name === 'MessageSent');
      if (!event) throw new Error(`transaction ${tx.hash} emitted no MessageSent event`);
      process.stdout.write(
        `dev: the L2→L1 message was mined ${((performance.now() - ready) / 1000).toFixed(1)} s after ready\n`,
      );
      return event.args._messageHash as string;
    })().finally(() => l2.destroy());
    const proofAt = poll(
      'svc_getProof',
      async () => {
        const r: { result?: unknown; error?: unknown } = await rpc('svc_getProof', [
          state.accounts[4]!.address,
          [],
          'finalized',
        ]).catch((err: Error) => ({ error: { code: 0, message: err.message } }));
        if (r.result) return performance.now();
        const said = JSON.stringify(r.error).replace(/\d+/g, 'N');
        if (!answers.some((a) => a.endsWith(said)))
          answers.push(`${((performance.now() - ready) / 1000).toFixed(1)} s: ${said}`);
        return undefined;
      },
      300,
    );
    const hash = await sending;
    const claimedAt = poll(
      'the L2→L1 claim',
      async () => {
        const res = await fetch(`${state.services.relayerApi}/messages/${hash}?direction=L2_TO_L1`);
        if (!res.ok) return undefined;
        const { status } = (await res.json()) as { status: string };
        if (['CLAIMED_REVERTED', 'NON_EXECUTABLE', 'ZERO_FEE', 'FEE_UNDERPRICED'].includes(status))
          throw new Error(`dev: the L2→L1 message ended ${status}`);
        return status === 'CLAIMED_SUCCESS' ? performance.now() : undefined;
      },
      300,
    );
    const [p, cl] = await Promise.all([proofAt, claimedAt]);
    process.stdout.write(
      `dev: svc_getProof served ${((p - ready) / 1000).toFixed(1)} s after ready; an L2→L1 message sent at ready claimed on L1 ${((cl - ready) / 1000).toFixed(1)} s after ready\n`,
    );
    for (const a of answers) process.stdout.write(`  svc_getProof before it served, from ${a}\n`);
  } finally {
    child.kill('SIGINT');
    setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
    await exited;
    // BENCH_STATE_DEV_LOG=path keeps what `l2stack dev` printed (with BENCH_STATE_DEV_LOG_LEVEL=info: the state
    // manager's progress).
    if (process.env.BENCH_STATE_DEV_LOG) writeFileSync(process.env.BENCH_STATE_DEV_LOG, out);
  }
}
