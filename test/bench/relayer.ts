/**
 * `npm run bench -- relayer`: N messages each way on the devnet (default 1,000; BENCH_MESSAGES overrides),
 * four phases in one run and one devnet, each on its own N messages and starting once all of them are
 * claimable, so each measures claiming alone:
 *  1. the relayer, talking to the chains directly (as in part 1); latency = anchored, as the relayer saw
 *     it → claim receipt, from its records;
 *  2. the same through a JSON-RPC proxy in front of each chain (test/bench/_drop-proxy.ts, in a thread of
 *     its own) that drops nothing: what the extra hop costs;
 *  3. the same with one claim in ten lost on its way to the node: the proxy answers every tenth new
 *     transaction with its hash but never forwards it (a resend of the same sender and nonce goes through).
 *     A lost transaction at a signer's lowest unmined nonce holds back all its later ones; the relayer
 *     rebroadcasts it once the node shows it never got it (relayer_claim_rebroadcasts_total), or bumps the
 *     fee at the same nonce after MESSAGE_SUBMISSION_TIMEOUT (relayer_claim_replacements_total): both counted;
 *  4. a minimal sequential claimer (one message at a time: send, wait for the receipt, next);
 *  5. (BENCH_KEYS=N > 1) the direct phase again with N signer keys per direction: N-1 extra dev accounts,
 *     funded on both chains, passed in L1_SIGNER_PRIVATE_KEYS / L2_SIGNER_PRIVATE_KEYS; which addresses
 *     signed the claims is read back from the claim transactions, so a relayer that ignores the variables
 *     shows;
 *  6. the backlog table: the direct phase on BENCH_BACKLOGS messages each way (default 100,1000,5000).
 * Prints p50/p95 latency and claims/s of each, the ratios, and part 1's figures for comparison.
 * BENCH_PROFILE=1 (or =direct; =drop for the phase that loses claims) samples this process's CPU (node:inspector,
 * as --cpu-prof; the relayer, PGlite and the coordinator share this thread) during that phase and prints the heaviest
 * self time (BENCH_PROFILE_OUT=<file> also writes the .cpuprofile). Each phase prints
 * the machine's load average and the CPU the devnet's anvil processes used. BENCH_RELAYER_<NAME>=value passes
 * <NAME>=value to the relayer (e.g. BENCH_RELAYER_L1_MAX_BLOCKS_TO_FETCH_LOGS).
 */
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { Contract, HDNodeWallet, Mnemonic, Transaction, parseEther } from 'ethers';
import { loadRelayerConfig, startRelayer } from '../../src/relayer/index.js';
import { messageTrees } from '../../src/common/chain/messages.js';
import { L1MessageService__factory, L2MessageService__factory } from '../../generated/contracts/types/index.js';
import { relayerEnv, startRelayerDevnet, testCommon, type RelayerDevnet } from '../e2e/relayer/harness.js';
import { countStatements } from '../relayer/statement-counter.js';
import { DEV_MNEMONIC } from '../../src/devnet/accounts.js';
import { childCpuMs, loadavg, startProfile, type ProfileSummary } from './relayer-profile.js';
import { allAnchored, openBenchDb, pct, retried, sendMany, sleep, type BenchDb } from './_relayer-backlog.js';
import { mined } from '../../src/common/chain/mined.js';

const N = Number(process.env.BENCH_MESSAGES ?? 1_000);
/** One new claim transaction in DROP_EVERY is lost: 10 %. */
const DROP_EVERY = 10;
const SUBMISSION_TIMEOUT_MS = 3_000;
/** How long this process's idle CPU is sampled before a relayer phase. */
const IDLE_SAMPLE_MS = 3_000;
/** BENCH_PHASES picks phases (direct, proxy, drop, sequential, keys, backlog); all by default. */
const PHASES = new Set(
  (process.env.BENCH_PHASES ?? 'direct,proxy,drop,sequential,keys,backlog').split(',').map((p) => p.trim()),
);
/** Signer keys per direction in the keys phase (the primary plus BENCH_KEYS-1 extra); 1 = no keys phase. */
const KEYS = Number(process.env.BENCH_KEYS ?? 1);
/** BENCH_PROFILE=1 (or =direct) profiles the direct phase; =drop the phase that loses claims. */
const PROFILE_PHASE = process.env.BENCH_PROFILE === '1' ? 'direct' : process.env.BENCH_PROFILE;
/**
 * BENCH_BLOCK_MS > 0: both chains stop mining a block per transaction (anvil's automine, the devnet's
 * default) and mine every BENCH_BLOCK_MS instead, as a real chain does; 0 (default) keeps automine.
 */
const BLOCK_MS = Number(process.env.BENCH_BLOCK_MS ?? 0);
/** BENCH_RELAYER_<NAME>=value is given to the relayer of every phase as <NAME>=value. */
const RELAYER_ENV = Object.fromEntries(
  Object.entries(process.env)
    .filter(([k, v]) => k.startsWith('BENCH_RELAYER_') && v !== undefined)
    .map(([k, v]) => [k.slice('BENCH_RELAYER_'.length), v!]),
);
/** Backlog table: sizes within this fraction of the smallest backlog's claims/s count as flat. */
const FLAT = 0.2;
/** The backlog phase: the relayer on each of these backlogs (messages each way), for the flatness table. */
const BACKLOGS = (process.env.BENCH_BACKLOGS ?? '100,1000,5000').split(',').map(Number);
/** Part 1 (issue 7), 500 messages each way on the same kind of devnet, claims/s. */
const PART1 = {
  messages: 500,
  relayer: { L1_TO_L2: 19.1, L2_TO_L1: 17.2 },
  sequential: { L1_TO_L2: 15.4, L2_TO_L1: 11.5 },
};
const DIRECTIONS = ['L1_TO_L2', 'L2_TO_L1'] as const;
type Dir = (typeof DIRECTIONS)[number];
interface Line {
  name: string;
  claims: number;
  p50: number;
  p95: number;
  claimsPerSecond: number;
}
/** What the claims of one relayer phase cost, both directions together. */
interface Cost {
  claims: number;
  cpuMsPerClaim: number;
  statementsPerClaim: number;
  rpcPerClaim: number;
  rpcByMethod: Record<string, number>;
}

function report(name: string, latencies: number[], seconds: number, extra = ''): Line {
  const line = {
    name,
    claims: latencies.length,
    p50: pct(latencies, 50),
    p95: pct(latencies, 95),
    claimsPerSecond: latencies.length / seconds,
  };
  console.log(
    `${name.padEnd(40)} claims=${line.claims} p50=${line.p50.toFixed(2)} s p95=${line.p95.toFixed(2)} s claims/s=${line.claimsPerSecond.toFixed(1)}${extra}`,
  );
  return line;
}

interface StageRow {
  direction: Dir;
  status: string;
  created_at: Date;
  anchored_at: Date;
  claim_tx_created_at: Date | null;
  claimed_at: Date | null;
}

/**
 * Where a claim's wall time goes, from the relayer's own timestamps: start → recorded (listener), recorded →
 * anchored (anchoring/finalization seen), anchored → signed (claiming loop: plan, lease, sign), signed →
 * claimed (broadcast, mining, receipt persister). Each stage as p50/p95 of the per-message gaps, and when the
 * last message reached it (seconds after the relayer started): the stage whose "last" grows most bounds claims/s.
 */
function printStages(name: string, ok: StageRow[], startMs: number): void {
  const t = (d: Date | null) => (d ? new Date(d).getTime() : NaN);
  const stages: [string, (r: StageRow) => number, (r: StageRow) => number][] = [
    ['start→recorded', () => startMs, (r) => t(r.created_at)],
    ['recorded→anchored', (r) => t(r.created_at), (r) => t(r.anchored_at)],
    ['anchored→signed', (r) => t(r.anchored_at), (r) => t(r.claim_tx_created_at)],
    ['signed→claimed', (r) => t(r.claim_tx_created_at), (r) => t(r.claimed_at)],
  ];
  const parts = stages.map(([stage, a, b]) => {
    const gaps = ok.map((r) => (b(r) - a(r)) / 1000).filter((x) => Number.isFinite(x));
    const last = Math.max(...ok.map((r) => (b(r) - startMs) / 1000).filter((x) => Number.isFinite(x)));
    return `${stage} p50 ${pct(gaps, 50).toFixed(2)} p95 ${pct(gaps, 95).toFixed(2)} last ${last.toFixed(1)}`;
  });
  console.log(`${' '.repeat(2)}${name} stages (s): ${parts.join(' | ')}`);
}

interface DropProxy {
  url: string;
  dropped(): Promise<number>;
  close(): Promise<number>;
}

/**
 * A drop proxy (test/bench/_drop-proxy.ts) in front of `upstream`, in a worker thread of its own. tsx's
 * loader is registered in the worker first, as bin/l2stack.js does, since workers do not inherit it.
 */
async function startDropProxy(upstream: string, dropEvery: number): Promise<DropProxy> {
  const tsx = import.meta.resolve('tsx/esm/api');
  const module = new URL('./_drop-proxy.ts', import.meta.url).href;
  const worker = new Worker(
    `import(${JSON.stringify(tsx)}).then((t) => { t.register(); return import(${JSON.stringify(module)}); });`,
    { eval: true, workerData: { upstream, dropEvery } },
  );
  // A failure inside the proxy is printed with its stack and ends the worker, not this run (unhandled, a
  // worker's 'error' event ends the process; once, under load, as a bare "socket hang up").
  worker.on('error', (err) => console.error(`drop proxy in front of ${upstream} failed:`, err));
  const [{ port }] = (await once(worker, 'message')) as [{ port: number }];
  const dropped = async () => {
    worker.postMessage('stats');
    return ((await once(worker, 'message')) as [{ dropped: number }])[0].dropped;
  };
  return { url: `http://127.0.0.1:${port}`, dropped, close: () => worker.terminate() };
}

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/** Switches both chains from a block per transaction to a block every `ms` (see BENCH_BLOCK_MS); returns the stop. */
async function intervalMining(d: RelayerDevnet, ms: number): Promise<() => Promise<void>> {
  const urls = [d.devnet.state.l1.rpcUrl, d.devnet.state.l2.rpcUrl];
  for (const url of urls) await rpc(url, 'evm_setAutomine', [false]);
  let running = true;
  const loops = urls.map(async (url) => {
    while (running) {
      const started = Date.now();
      await rpc(url, 'evm_mine').catch(() => undefined);
      await sleep(Math.max(ms - (Date.now() - started), 0));
    }
  });
  return async () => {
    running = false;
    await Promise.all(loops);
    for (const url of urls) await rpc(url, 'evm_setAutomine', [true]).catch(() => undefined);
  };
}

/**
 * The extra signer keys of the keys phase: dev accounts beyond the devnet's own (HD index 100+), funded on both chains.
 */
async function extraSigners(d: RelayerDevnet, n: number): Promise<string[]> {
  const mnemonic = Mnemonic.fromPhrase(DEV_MNEMONIC);
  const keys = Array.from({ length: n }, (_, i) => HDNodeWallet.fromMnemonic(mnemonic, `m/44'/60'/0'/0/${100 + i}`));
  for (const layer of ['l1', 'l2'] as const) {
    const provider = d.wallet(15, layer).provider as unknown as {
      send(method: string, params: unknown[]): Promise<unknown>;
    };
    for (const k of keys)
      await provider.send('anvil_setBalance', [k.address, '0x' + parseEther('1000000').toString(16)]);
  }
  return keys.map((k) => k.privateKey);
}

interface PhaseOptions {
  label: string;
  account: number;
  dropEvery?: number;
  count?: number;
  extraKeys?: string[];
  profile?: boolean;
}
type PhaseResult = Line[] & {
  cost?: Cost;
  bumps?: Record<Dir, { dropped: number; bumps: number }>;
  signers?: Record<Dir, number>;
  profile?: ProfileSummary;
};

/**
 * The relayer claims N each way sent by test account `account`, talking to the chains directly
 * (`dropEvery` undefined) or through drop proxies; it starts once every message is claimable (as the
 * baseline does), so this measures claiming alone.
 */
async function relayerPhase(d: RelayerDevnet, db: BenchDb, o: PhaseOptions): Promise<PhaseResult> {
  const { label, account, dropEvery } = o;
  const count = o.count ?? N;
  // Errors only: the bump phase would print a warning for each of its hundreds of fee bumps.
  const common = testCommon('error');
  const from = {
    l1: await retried(() => d.wallet(account, 'l1').provider!.getBlockNumber()),
    l2: await retried(() => d.wallet(account, 'l2').provider!.getBlockNumber()),
  };
  const [l1, l2] = await Promise.all([
    sendMany(d, d.wallet(account, 'l1'), 'l1', count),
    sendMany(d, d.wallet(account, 'l2'), 'l2', count),
  ]);
  await allAnchored(d, l1, l2);
  const s = d.devnet.state;
  const proxies =
    dropEvery === undefined
      ? undefined
      : { l1: await startDropProxy(s.l1.rpcUrl, dropEvery), l2: await startDropProxy(s.l2.rpcUrl, dropEvery) };
  const extra: Record<string, string> =
    o.extraKeys && o.extraKeys.length > 0
      ? { L1_SIGNER_PRIVATE_KEYS: o.extraKeys.join(','), L2_SIGNER_PRIVATE_KEYS: o.extraKeys.join(',') }
      : {};
  const loaded = loadRelayerConfig(
    relayerEnv(d, {
      L1_RPC_URL: proxies?.l1.url ?? s.l1.rpcUrl,
      L2_RPC_URL: proxies?.l2.url ?? s.l2.rpcUrl,
      L1_LISTENER_INITIAL_FROM_BLOCK: String(from.l1),
      L2_LISTENER_INITIAL_FROM_BLOCK: String(from.l2),
      MESSAGE_SUBMISSION_TIMEOUT: String(SUBMISSION_TIMEOUT_MS),
      ...extra,
      ...RELAYER_ENV,
    }),
  );
  const schema = db.schema(`bench_relayer_${account}_${Date.now() % 100_000}`);
  // CPU of this process while idle (the in-process coordinator, this loop's polling) is measured first and
  // taken off the relayer's figure.
  const idleStart = process.cpuUsage();
  await sleep(IDLE_SAMPLE_MS);
  const idle = process.cpuUsage(idleStart);
  const idleMsPerMs = (idle.user + idle.system) / 1_000 / IDLE_SAMPLE_MS;
  const loadBefore = loadavg();
  const statements = countStatements(db.client.knex, schema);
  const anvilStart = childCpuMs('anvil');
  const cpuStart = process.cpuUsage();
  const wallStart = Date.now();
  const relayer = await startRelayer({
    common,
    db: db.client,
    config: { ...loaded, api: { ...loaded.api, port: 0 } },
    schema,
  });
  // Sampled from when the relayer runs (its start compiles the API's schemas once, which is not per claim).
  const stopProfile = o.profile ? await startProfile(500, process.env.BENCH_PROFILE_OUT) : undefined;
  const total = l1.length + l2.length;
  const q = () => db.client.knex(`${schema}.message`);
  // Every message ends claimed, or in a final status other than success (reported): bounded either way.
  const deadline = Date.now() + Math.max(600_000, count * 600);
  for (;;) {
    const open = (await q()
      .whereIn('status', ['SENT', 'TRANSACTION_SIZE_COMPUTED', 'ANCHORED', 'PENDING', 'FEE_UNDERPRICED'])
      .count({ count: '*' })) as [{ count: string }];
    const [{ count: seen }] = (await q().count({ count: '*' })) as [{ count: string }];
    if ((Number(seen) >= total && Number(open[0].count) === 0) || Date.now() > deadline) break;
    await sleep(500);
  }
  const cpu = process.cpuUsage(cpuStart);
  const wallMs = Date.now() - wallStart;
  const anvilMs = childCpuMs('anvil') - anvilStart;
  const profile = await stopProfile?.();
  statements.stop();
  const loadAfter = loadavg();
  const rows = (await q().select(
    'direction',
    'status',
    'created_at',
    'anchored_at',
    'claim_tx_created_at',
    'claimed_at',
    'claim_tx_raw',
  )) as (StageRow & { claim_tx_raw: string | null })[];
  const replacements = (await common.metrics.getSingleMetric('relayer_claim_replacements_total')!.get()).values;
  const rebroadcasts = (await common.metrics.getSingleMetric('relayer_claim_rebroadcasts_total')?.get())?.values ?? [];
  const rpcValues = (await common.metrics.getSingleMetric('relayer_rpc_calls_total')?.get())?.values ?? [];
  await relayer.stop();
  const dropped = { L1_TO_L2: await proxies?.l2.dropped(), L2_TO_L1: await proxies?.l1.dropped() };
  await Promise.all([proxies?.l1.close(), proxies?.l2.close()]);
  const results = [];
  const bumps = {} as Record<Dir, { dropped: number; bumps: number }>;
  const signers = {} as Record<Dir, number>;
  for (const dir of DIRECTIONS) {
    const rs = rows.filter((r) => r.direction === dir);
    const ok = rs.filter((r) => r.status === 'CLAIMED_SUCCESS' && r.claimed_at);
    const others = rs.length - ok.length;
    const lat = ok.map((r) => (new Date(r.claimed_at!).getTime() - new Date(r.anchored_at).getTime()) / 1000);
    const span =
      (Math.max(...ok.map((r) => new Date(r.claimed_at!).getTime())) -
        Math.min(...rs.map((r) => new Date(r.anchored_at).getTime()))) /
      1000;
    const count = (kind: string) =>
      replacements.filter((v) => v.labels.direction === dir && v.labels.kind === kind).reduce((a, v) => a + v.value, 0);
    bumps[dir] = { dropped: dropped[dir] ?? 0, bumps: count('bump') };
    // Which keys signed this direction's claims, from the signed transactions themselves.
    const by = new Map<string, number>();
    // (Recovering each sender costs ~1 ms: only in the keys phase.)
    if (o.extraKeys) {
      for (const r of ok) {
        if (!r.claim_tx_raw) continue;
        const signer = Transaction.from(r.claim_tx_raw).from!;
        by.set(signer, (by.get(signer) ?? 0) + 1);
      }
    }
    signers[dir] = by.size;
    const resent = (trigger: string) =>
      rebroadcasts
        .filter((v) => v.labels.direction === dir && v.labels.trigger === trigger)
        .reduce((a, v) => a + v.value, 0);
    const extraText = dropEvery
      ? ` dropped=${dropped[dir]} bumps=${count('bump')} cancels=${count('cancel')} rebroadcasts=${resent('after_send')} right after the send, ${resent('lowest_nonce')} at the lowest nonce, ${resent('age')} after 10 s`
      : '';
    const keysText = o.extraKeys ? ` signers=${by.size} (${[...by.values()].join('/')} claims)` : '';
    results.push(
      report(`${label} ${dir}`, lat, span, `${extraText}${keysText}${others > 0 ? ` NOT CLAIMED=${others}` : ''}`),
    );
    printStages(`${label} ${dir}`, ok, wallStart);
    if (o.extraKeys && o.extraKeys.length > 0 && by.size <= 1) {
      console.log(
        `  ${label} ${dir}: the relayer ignored L1_SIGNER_PRIVATE_KEYS/L2_SIGNER_PRIVATE_KEYS: every claim was signed by ${[...by.keys()].join(', ') || 'no key'}`,
      );
    }
  }
  const claims = rows.filter((r) => r.status === 'CLAIMED_SUCCESS').length;
  const rpcByMethod: Record<string, number> = {};
  for (const v of rpcValues)
    rpcByMethod[String(v.labels.method)] = (rpcByMethod[String(v.labels.method)] ?? 0) + v.value / Math.max(claims, 1);
  const rpcTotal = rpcValues.reduce((a, v) => a + v.value, 0);
  const cpuMs = Math.max((cpu.user + cpu.system) / 1_000 - idleMsPerMs * wallMs, 0);
  const cost: Cost = {
    claims,
    cpuMsPerClaim: cpuMs / Math.max(claims, 1),
    statementsPerClaim: statements.count() / Math.max(claims, 1),
    rpcPerClaim: rpcTotal / Math.max(claims, 1),
    rpcByMethod,
  };
  const methods = Object.entries(rpcByMethod)
    .sort((a, b) => b[1] - a[1])
    .map(([m, n]) => `${m} ${n.toFixed(2)}`)
    .join(', ');
  const kinds = Object.entries(statements.byKind())
    .map(([k, n]) => `${k} ${(n / Math.max(claims, 1)).toFixed(2)}`)
    .join(', ');
  console.log(
    `${label}: per claim (${claims} claims, both directions): CPU ${cost.cpuMsPerClaim.toFixed(2)} ms (idle ${(idleMsPerMs * 100).toFixed(0)} % of a core taken off), SQL statements ${cost.statementsPerClaim.toFixed(1)} (${kinds}), RPC calls ${cost.rpcPerClaim.toFixed(2)} (${methods})`,
  );
  console.log(
    `${label}: ${(wallMs / 1000).toFixed(1)} s; this process ${((cpu.user + cpu.system) / 10 / wallMs).toFixed(0)} % of a core, the two anvils ${((anvilMs * 100) / wallMs).toFixed(0)} % (${(anvilMs / Math.max(claims, 1)).toFixed(2)} ms per claim); load average ${loadBefore} before, ${loadAfter} after`,
  );
  if (profile) {
    console.log(
      `${label}: CPU profile of this process (relayer, PGlite, coordinator, bench polling): ${profile.busyMs.toFixed(0)} ms on CPU, ${(profile.busyMs / Math.max(claims, 1)).toFixed(2)} ms per claim; heaviest self time:`,
    );
    for (const [fn, ms] of profile.top)
      console.log(`  ${((100 * ms) / profile.busyMs).toFixed(1).padStart(5)} %  ${fn}`);
    console.log('  by module:');
    for (const [m, ms] of profile.byModule)
      console.log(`  ${((100 * ms) / profile.busyMs).toFixed(1).padStart(5)} %  ${m}`);
    console.log('  by the nearest src/ function on the stack (its own time and what it calls):');
    for (const [m, ms] of profile.byProjectCaller)
      console.log(`  ${((100 * ms) / profile.busyMs).toFixed(1).padStart(5)} %  ${m}`);
  }
  return Object.assign(results, { cost, bumps, signers, profile });
}

/** The baseline: claims one message at a time with the devnet's own bindings, waiting for each receipt. */
async function baselinePhase(d: RelayerDevnet): Promise<Line[]> {
  const s = d.devnet.state;
  const claimerL1 = d.wallet(15, 'l1');
  const claimerL2 = d.wallet(15, 'l2');
  const [l1, l2] = await Promise.all([
    sendMany(d, d.wallet(14, 'l1'), 'l1', N),
    sendMany(d, d.wallet(14, 'l2'), 'l2', N),
  ]);
  const l2Service = L2MessageService__factory.connect(s.l2.messageService, claimerL2);
  const l1Service = L1MessageService__factory.connect(s.l1.messageService, claimerL1);
  const results = [];

  // Wait until all are anchored (L1→L2) and finalized (L2→L1), then claim one by one.
  await allAnchored(d, l1, l2);
  let start = Date.now();
  let lat: number[] = [];
  for (const m of l1) {
    await mined(l2Service.claimMessage(m.from, m.to, m.fee, m.value, claimerL2.address, m.calldata, m.nonce));
    lat.push((Date.now() - start) / 1000);
  }
  results.push(report('sequential L1_TO_L2', lat, (Date.now() - start) / 1000, `; load average ${loadavg()}`));

  // L2→L1: read the roots of the finalizations and build the proofs.
  const lastBlock = Math.max(...l2.map((m) => m.block));
  const rootsAdded = await l1Service.queryFilter(l1Service.filters.L2MerkleRootAdded(), 0);
  const finalized = await l1Service.queryFilter(l1Service.filters.BlocksFinalized(), 0);
  const events = new Contract(s.l2.messageService, L2MessageService__factory.abi, claimerL2.provider);
  start = Date.now();
  lat = [];
  for (const f of finalized) {
    const [first, last] = [Number(f.args.lastFinalizedBlock) + 1, Number(f.args.finalizedBlock)];
    if (last < Math.min(...l2.map((m) => m.block)) || first > lastBlock) continue;
    const logs = await events.queryFilter(events.filters.MessageSent!(), first, last);
    const hashes = logs
      .map((l) => events.interface.parseLog(l)!)
      .sort((a, b) => Number((a.args._nonce as bigint) - (b.args._nonce as bigint)))
      .map((p) => String(p.args._messageHash));
    const roots = rootsAdded.filter((r) => r.transactionHash === f.transactionHash);
    if (roots.length === 0) continue;
    const depth = Number(roots[0]!.args.treeDepth);
    const trees = messageTrees(hashes, depth);
    for (const m of l2.filter((x) => x.block >= first && x.block <= last)) {
      const i = hashes.indexOf(m.hash);
      const tree = trees[Math.floor(i / 2 ** depth)]!;
      const leaf = i % 2 ** depth;
      await mined(
        l1Service.claimMessageWithProof({
          proof: tree.proof(leaf),
          messageNumber: m.nonce,
          leafIndex: leaf,
          from: m.from,
          to: m.to,
          fee: m.fee,
          value: m.value,
          feeRecipient: claimerL1.address,
          merkleRoot: tree.root,
          data: m.calldata,
        }),
      );
      lat.push((Date.now() - start) / 1000);
    }
  }
  results.push(report('sequential L2_TO_L1', lat, (Date.now() - start) / 1000, `; load average ${loadavg()}`));
  return results;
}

/**
 * At load 7-14 three runs ended on a bare "socket hang up" / ECONNRESET emitted on an HTTP request without an
 * error listener, between the proxy and drop phases (the proxies' worker threads are terminated there, with
 * kept-alive sockets to them in the process's node pool); no request of the bench or the relayer was found
 * without a listener. While the bench runs, such a reset is printed and the run goes on; anything else still
 * ends it.
 */
function survivingConnectionResets(): () => void {
  const onError = (err: Error & { code?: string }) => {
    if (err.code !== 'ECONNRESET') throw err;
    console.error(`bench: a connection reset with no listener, ignored: ${err.message}\n${err.stack ?? ''}`);
  };
  process.on('uncaughtException', onError);
  return () => void process.off('uncaughtException', onError);
}

export async function main(): Promise<void> {
  const stopSurviving = survivingConnectionResets();
  const db = await openBenchDb();
  const common = testCommon('warn');
  const d = await startRelayerDevnet(common, db.client, db.schema('bench_coordinator'), { blockTimeMs: 1_000 });
  const stopMining = BLOCK_MS > 0 ? await intervalMining(d, BLOCK_MS) : undefined;
  try {
    const phases = [...PHASES].filter((p) => p !== 'keys' || KEYS > 1);
    console.log(
      `${N} messages each way, database ${db.client.kind}, phases ${phases.join(', ')}; the drop phase loses 1 new claim transaction in ${DROP_EVERY}; MESSAGE_SUBMISSION_TIMEOUT ${SUBMISSION_TIMEOUT_MS} ms; BENCH_KEYS ${KEYS}; ${BLOCK_MS > 0 ? `a block every ${BLOCK_MS} ms (BENCH_BLOCK_MS)` : 'a block per transaction (anvil automine)'}; load average ${loadavg()}`,
    );
    const direct = PHASES.has('direct')
      ? await relayerPhase(d, db, { label: 'relayer', account: 13, profile: PROFILE_PHASE === 'direct' })
      : undefined;
    const proxied = PHASES.has('proxy')
      ? await relayerPhase(d, db, { label: 'relayer via proxy', account: 16, dropEvery: 0 })
      : undefined;
    const bumped = PHASES.has('drop')
      ? await relayerPhase(d, db, {
          label: 'relayer via proxy, 10 % lost',
          account: 17,
          dropEvery: DROP_EVERY,
          profile: PROFILE_PHASE === 'drop',
        })
      : undefined;
    const baseline = PHASES.has('sequential') ? await baselinePhase(d) : undefined;
    const keyed =
      PHASES.has('keys') && KEYS > 1
        ? await relayerPhase(d, db, {
            label: `relayer, ${KEYS} keys`,
            account: 19,
            extraKeys: await extraSigners(d, KEYS - 1),
          })
        : undefined;
    const backlog: { messages: number; lines: PhaseResult }[] = [];
    // Fresh senders per backlog (accounts 10, 11, 18 are not used by the other phases).
    const backlogAccounts = [10, 11, 18];
    if (PHASES.has('backlog')) {
      for (const [i, b] of BACKLOGS.entries())
        backlog.push({
          messages: b,
          lines: await relayerPhase(d, db, {
            label: `relayer, backlog ${b}`,
            account: backlogAccounts[i % backlogAccounts.length]!,
            count: b,
          }),
        });
    }
    console.log(`\nsummary: database ${db.client.kind}, ${N} messages each way, load average ${loadavg()}`);
    for (const [i, dir] of DIRECTIONS.entries()) {
      const b = baseline?.[i];
      const vs = (x: Line) =>
        `${x.claimsPerSecond.toFixed(1)} claims/s${b ? ` (${(x.claimsPerSecond / b.claimsPerSecond).toFixed(1)}x sequential)` : ''}, p50 ${x.p50.toFixed(1)} s, p95 ${x.p95.toFixed(1)} s${b ? ` (${(x.p95 / b.p95).toFixed(2)}x)` : ''}`;
      // The drop phase against the loss-free run through the same proxy (or the direct one without it).
      const lossFree = proxied ?? direct;
      const lost = bumped?.bumps?.[dir];
      const parts = [
        b && `sequential ${b.claimsPerSecond.toFixed(1)} claims/s, p95 ${b.p95.toFixed(1)} s`,
        direct && `relayer ${vs(direct[i]!)}`,
        proxied && `via proxy ${vs(proxied[i]!)}`,
        bumped &&
          `via proxy with 10 % lost ${vs(bumped[i]!)}${lossFree ? ` (${(bumped[i]!.claimsPerSecond / lossFree[i]!.claimsPerSecond).toFixed(2)}x loss-free)` : ''}${lost ? `, ${(lost.bumps / Math.max(lost.dropped, 1)).toFixed(2)} bumps per lost tx (${lost.bumps}/${lost.dropped})` : ''}`,
        keyed &&
          `${KEYS} keys ${vs(keyed[i]!)}${direct ? ` (${(keyed[i]!.claimsPerSecond / direct[i]!.claimsPerSecond).toFixed(2)}x 1 key)` : ''}, ${keyed.signers?.[dir]} signers used${(keyed.signers?.[dir] ?? 0) <= 1 ? ' (the extra keys were ignored: any difference from 1 key is not theirs)' : ''}`,
      ].filter(Boolean);
      console.log(`${dir}: ${parts.join('; ')}`);
      console.log(
        `${' '.repeat(dir.length)}  part 1 (${PART1.messages} each way): relayer ${PART1.relayer[dir]} vs sequential ${PART1.sequential[dir]} claims/s (${(PART1.relayer[dir] / PART1.sequential[dir]).toFixed(1)}x)`,
      );
    }
    for (const [name, r] of [
      ['relayer', direct],
      ['via proxy', proxied],
      ['10 % lost', bumped],
      [`${KEYS} keys`, keyed],
    ] as const) {
      if (r?.cost)
        console.log(
          `per claim, ${name}: CPU ${r.cost.cpuMsPerClaim.toFixed(2)} ms, SQL ${r.cost.statementsPerClaim.toFixed(1)}, RPC ${r.cost.rpcPerClaim.toFixed(2)}`,
        );
    }
    if (backlog.length > 0) {
      const first = backlog[0]!.lines;
      console.log(
        '\nbacklog (messages each way) | L1_TO_L2 claims/s | L2_TO_L1 claims/s | vs smallest backlog | CPU ms/claim | SQL/claim | RPC/claim',
      );
      for (const { messages, lines } of backlog) {
        const ratio = DIRECTIONS.map((_, i) => (lines[i]!.claimsPerSecond / first[i]!.claimsPerSecond).toFixed(2)).join(
          ' / ',
        );
        console.log(
          `${String(messages).padStart(27)} | ${lines[0]!.claimsPerSecond.toFixed(1).padStart(17)} | ${lines[1]!.claimsPerSecond.toFixed(1).padStart(17)} | ${ratio.padStart(19)} | ${lines.cost!.cpuMsPerClaim.toFixed(2).padStart(12)} | ${lines.cost!.statementsPerClaim.toFixed(1).padStart(9)} | ${lines.cost!.rpcPerClaim.toFixed(2).padStart(9)}`,
        );
      }
      const flat = DIRECTIONS.map((_, i) => {
        const rates = backlog.map((x) => x.lines[i]!.claimsPerSecond);
        return Math.min(...rates) >= (1 - FLAT) * Math.max(...rates);
      });
      console.log(
        `flat (every size within ${FLAT * 100} % of the fastest): ${DIRECTIONS.map((dir, i) => `${dir} ${flat[i] ? 'yes' : 'no'}`).join(', ')}`,
      );
    }
  } finally {
    await stopMining?.();
    await d.stop();
    await db.close();
    stopSurviving();
  }
}
