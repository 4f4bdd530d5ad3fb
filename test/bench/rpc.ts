/**
 * `npm run bench -- rpc`: the endpoint (`l2stack rpc`, embedded PGlite unless DATABASE_HOST is set) against
 * anvil directly and against two calibrators, every side in its own process, in the same run, under
 * autocannon with 32 keep-alive connections and static bodies (test/bench/_load.ts: no request built and no
 * answer read in JavaScript under load; answers checked on a sample). Sides:
 * - anvil: the node itself (Rust, all cores);
 * - floor node:http: a bare node:http server that parses the body and answers a constant (_floor-server.mjs):
 *   the floor of any Node endpoint, so "x floor" is the share of the transport's best our code leaves;
 * - floor uWS: the same on uWebSockets.js (the uwebsockets package), a second calibrator;
 * - on / off: the endpoint with the answer cache on (RPC_CACHE_BYTES default) and off (RPC_CACHE_BYTES=0);
 * - on uWS: the endpoint with the cache on and its public port on uWebSockets.js: RPC_TRANSPORT unset ("default
 *   (uWS)") where `auto` picks uWS, else RPC_TRANSPORT=uws.
 * Cases: eth_blockNumber (served from the head), eth_getBalance (the cache), eth_call, eth_getLogs (one block
 * of 1,000 logs), eth_getFilterChanges with nothing new and while blocks with logs arrive (a filter per
 * connection: 32 autocannon instances of one connection, one static body each), a finalized
 * eth_getBlockByNumber with full transactions.
 * Printed per case and side: requests/s, the ratio to anvil and to the node:http floor, p50/p99, the CPU the
 * side's process used per request (/proc) and the cores it kept busy, the cores autocannon used and the
 * machine's idle share, and what bounds the figure. The cache-off endpoint runs with --cpu-prof (BENCH_PROFILE=on:
 * the cache-on one; BENCH_PROFILE=uws: the one on uWS) and its heaviest functions are printed. BENCH_SECONDS (default
 * 4) per run; BENCH_ROUNDS (default 1) rounds of every side per case, taking turns (the median and the spread of the
 * ratios); BENCH_ONLY=<regex> runs only the matching cases. The head, cached balance and empty poll also run at fixed
 * rates, open loop (test/bench/_fixed-rate.ts): BENCH_FIXED shares of the floor's saturated rate in that case (default
 * 0.5,0.9) and BENCH_FIXED_RATES absolute rates (default 10000), BENCH_FIXED_SECONDS each (default 3), p50/p99 in µs
 * per side; BENCH_FIXED=off skips them. Then a latency probe (test/bench/_probe.ts).
 * BENCH_RPC_SCALE=1,2 runs only the scaling part instead (test/bench/_rpc-scale.ts). BENCH_RPC_BASELINE=<checkout>
 * adds a sixth side, "before": the cache-on endpoint of another checkout (its dist/ built there beforehand, e.g.
 * `git archive <commit> | tar -x -C <dir>` and `tsc -p tsconfig.build.json` in it), so a change is measured
 * against the code before it in the same run.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ethers } from 'ethers';
import { chain, deployOuter, result, wallet } from '../rpc/helpers.js';
import { CONNECTIONS, load, machineTicks, startCalibrator, type Side, type Target } from './_load.js';
import { fixedRate } from './_fixed-rate.js';
import { latencyProbe, PROBES } from './_probe.js';
import { nowUs, summarizeProfile } from './_profile.js';
import { builtEntry, cpuSeconds, startEndpoint, type RunningEndpoint } from './_rpc-endpoint.js';
import { scaling } from './_rpc-scale.js';
import { mined } from '../../src/common/chain/mined.js';
import { chooseTransport } from '../../src/rpc/transport/uws/load.js';

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
export const fmt = (n: number, d = 2) => n.toFixed(d);
export const cores = () => readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm)?.length ?? 0;

// The compiled build unless BENCH_RPC_SOURCE=1 (the sources through tsx: see builtEntry).
let entry: string | undefined;
export const entryName = () =>
  process.env.BENCH_RPC_SOURCE
    ? 'sources through tsx (BENCH_RPC_SOURCE)'
    : 'compiled build (dist/, as the image runs it)';

/** An endpoint of this bench: the shared launcher with the bench's limits. */
export async function startBenchEndpoint(
  name: string,
  upstream: string,
  env: Record<string, string>,
  nodeFlags: string[] = [],
  from?: string,
): Promise<Target & RunningEndpoint> {
  if (!process.env.BENCH_RPC_SOURCE) entry ??= builtEntry();
  // The filter cases make 32 filters per case on each endpoint (uninstalled after it).
  const running = await startEndpoint(
    upstream,
    { RPC_MAX_LOGS_RESULTS: '10000', RPC_MAX_FILTERS_PER_CLIENT: '1000', ...env },
    nodeFlags,
    from ?? entry,
  );
  return { ...running, name };
}

/** What bounds a side's figure: its one event loop (a Node process near a core), or a machine with no idle CPU. */
export function bound(s: Side, singleThreaded: boolean): string {
  if (singleThreaded && (s.cores ?? 0) >= 0.85) return 'its one thread';
  if (s.idle < 0.08) return `the machine (no idle CPU; autocannon ${fmt(s.loaderCores)} cores)`;
  return `neither (${fmt(100 * s.idle, 0)} % idle: waits)`;
}

const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
// Fixed-rate runs (test/bench/_fixed-rate.ts): shares of the node:http floor's saturated rate in the same case,
// and absolute rates; BENCH_FIXED=off skips them.
const FIXED_SHARES =
  process.env.BENCH_FIXED === 'off' ? [] : (process.env.BENCH_FIXED ?? '0.5,0.9').split(',').map(Number);
const FIXED_RATES =
  process.env.BENCH_FIXED === 'off' ? [] : (process.env.BENCH_FIXED_RATES ?? '10000').split(',').map(Number);
const FIXED_SECONDS = Number(process.env.BENCH_FIXED_SECONDS ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** One side's line: its median round (by req/s), and its ratios to anvil and the floor of the same round. */
function printSide(t: Target, rounds: Map<Target, Side>[], direct: Target, floor: Target): void {
  const ofSide = rounds.map((r) => r.get(t)!);
  const s = [...ofSide].sort((a, b) => a.rps - b.rps)[Math.floor(ofSide.length / 2)]!;
  const toAnvil = rounds.map((r) => r.get(t)!.rps / r.get(direct)!.rps);
  const toFloor = rounds.map((r) => r.get(t)!.rps / r.get(floor)!.rps);
  const spread = (xs: number[]) => (xs.length > 1 ? ` (${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))})` : '');
  const bad = ofSide.reduce((n, x) => n + x.bad, 0);
  console.log(
    `  ${t.name.padEnd(16)} ${fmt(s.rps, 0).padStart(6)} req/s ${fmt(median(toAnvil)).padStart(5)}x anvil ${fmt(median(toFloor)).padStart(5)}x floor${spread(toFloor)}  p50 ${fmt(s.p50)} p99 ${fmt(s.p99)} ms  ` +
      `cpu ${fmt(s.cpuUsPerReq ?? NaN, 1).padStart(5)} µs/req (${fmt(s.cores ?? NaN)} cores)  idle ${fmt(100 * s.idle, 0).padStart(2)} %  bound: ${bound(s, t !== direct)}` +
      `${bad > 0 ? `  BAD ${bad} (${ofSide.reduce((n, x) => n + x.sampled, 0)} sampled of ${ofSide.reduce((n, x) => n + x.total, 0)})` : ''}`,
  );
}

/**
 * The case at fixed rates: shares of the floor's saturated rate measured just before, and absolute ones; per
 * side the latency from each request's release (µs), the rate it kept up with, and what bounds it.
 */
async function fixedRates(
  name: string,
  bodies: (t: Target) => string[],
  floorRps: number,
  sides: Target[],
): Promise<void> {
  const rates = [
    ...FIXED_SHARES.map((share) => ({
      rate: Math.round(share * floorRps),
      label: `${fmt(share)} of the floor's ${fmt(floorRps, 0)} req/s`,
    })),
    ...FIXED_RATES.map((rate) => ({ rate, label: 'fixed' })),
  ];
  for (const { rate, label } of rates) {
    console.log(
      `  at ${rate} req/s (${label}), ${CONNECTIONS} connections, ${FIXED_SECONDS} s, open loop (test/bench/_fixed-rate.ts):`,
    );
    for (const t of sides) {
      const before = cpuSeconds(t.pid);
      const machine = machineTicks();
      const r = await fixedRate(t.url, bodies(t), rate, FIXED_SECONDS, CONNECTIONS);
      const after = machineTicks();
      const idle = (after.idle - machine.idle) / Math.max(1, after.total - machine.total);
      const cpuUs =
        t.pid === undefined ? NaN : ((cpuSeconds(t.pid) - before) * 1e6) / Math.max(1, r.achieved * FIXED_SECONDS);
      const kept = r.achieved >= 0.98 * rate ? 'kept up' : `fell behind (${fmt((100 * r.achieved) / rate, 0)} %)`;
      console.log(
        `    ${t.name.padEnd(16)} p50 ${fmt(r.p50Us, 0).padStart(6)} µs  p99 ${fmt(r.p99Us, 0).padStart(6)} µs  max ${fmt(r.maxUs / 1000, 1).padStart(6)} ms  ${fmt(r.achieved, 0).padStart(6)} req/s ${kept}  cpu ${fmt(cpuUs, 1)} µs/req  machine idle ${fmt(100 * idle, 0)} %` +
          `${r.bad + r.unanswered > 0 ? `  BAD ${r.bad} non-200, ${r.unanswered} unanswered` : ''}`,
      );
    }
  }
}

export async function main(): Promise<void> {
  if (process.env.BENCH_RPC_SCALE) return scaling(process.env.BENCH_RPC_SCALE.split(',').map(Number));
  const { anvil, provider } = await chain();
  const signer = wallet(0, provider);
  const outer = await deployOuter(signer);
  const address = await outer.getAddress();
  const tx = (await outer.getFunction('note')(1n, ethers.id('bench'), 1000n, {
    gasLimit: 29_000_000n,
  })) as ethers.TransactionResponse;
  const receipt = (await mined(tx))!;
  // Enough blocks on top that the logs block is final for anvil (its finalized tag trails the head).
  await provider.send('anvil_mine', ['0x80']);
  const profileDir = mkdtempSync(join(tmpdir(), 'l2stack-rpc-prof-'));
  // Which endpoint runs under --cpu-prof: cache off (default), on (BENCH_PROFILE=on) or on uWS (BENCH_PROFILE=uws).
  const profiled = process.env.BENCH_PROFILE === 'on' ? 'on' : process.env.BENCH_PROFILE === 'uws' ? 'uws' : 'off';
  const profileFlags = ['--cpu-prof', `--cpu-prof-dir=${profileDir}`];
  // The floor is profiled too, so the endpoint's profile can be read as what it costs beyond the floor.
  const floorProfileDir = mkdtempSync(join(tmpdir(), 'l2stack-floor-prof-'));
  const direct: Target = { name: 'anvil', url: anvil.url, pid: anvil.process.pid };
  const floor = await startCalibrator('node', ['--cpu-prof', `--cpu-prof-dir=${floorProfileDir}`]);
  const uws = await startCalibrator('uws');
  // on and off are the node:http endpoint, named: the default (auto) would be uWS wherever its build loads.
  const on = await startBenchEndpoint(
    'on',
    anvil.url,
    { RPC_TRANSPORT: 'node' },
    profiled === 'on' ? profileFlags : [],
  );
  const off = await startBenchEndpoint(
    'off',
    anvil.url,
    { RPC_TRANSPORT: 'node', RPC_CACHE_BYTES: '0' },
    profiled === 'off' ? profileFlags : [],
  );
  // The uWS side is the default endpoint (RPC_TRANSPORT unset) wherever `auto` picks uWS, as a user runs it.
  const autoIsUws = chooseTransport('auto', 1).transport === 'uws';
  const onUws = await startBenchEndpoint(
    autoIsUws ? 'default (uWS)' : 'on uWS',
    anvil.url,
    autoIsUws ? {} : { RPC_TRANSPORT: 'uws' },
    profiled === 'uws' ? profileFlags : [],
  );
  const profiledSide = { on, off, uws: onUws }[profiled];
  const baseline = process.env.BENCH_RPC_BASELINE;
  const before = baseline
    ? await startBenchEndpoint('before (on)', anvil.url, {}, [], join(baseline, 'dist/src/cli.js'))
    : undefined;
  const sides: Target[] = [direct, floor, uws, on, off, onUws, ...(before ? [before] : [])];
  let miner: NodeJS.Timeout | undefined;
  let profiledRequests = 0;
  let floorRequests = 0;
  const windows: [number, number][] = [];
  const floorWindows: [number, number][] = [];
  try {
    const logsBlock = `0x${receipt.blockNumber.toString(16)}`;
    const logsCount = (
      (await result(on.url, 'eth_getLogs', [{ fromBlock: logsBlock, toBlock: logsBlock, address }])) as unknown[]
    ).length;
    const req = (method: string, params: unknown[]) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
    const filterIds = new Map<string, string[]>();
    const makeFilters = async () => {
      for (const t of sides) {
        filterIds.set(
          t.url,
          await Promise.all(
            Array.from(
              { length: CONNECTIONS },
              () =>
                result(t === floor || t === uws ? anvil.url : t.url, 'eth_newFilter', [{ address }]) as Promise<string>,
            ),
          ),
        );
      }
    };
    const uninstallAll = async () => {
      for (const [url, ids] of filterIds)
        for (const id of ids)
          await result(url === floor.url || url === uws.url ? anvil.url : url, 'eth_uninstallFilter', [id]);
      filterIds.clear();
    };
    // A filter per connection: each connection polls its own filter with a fixed body.
    const pollBodies = (t: Target) => filterIds.get(t.url)!.map((id) => req('eth_getFilterChanges', [id]));
    const cases: {
      name: string;
      bodies: (t: Target) => string[];
      before?: () => Promise<void>;
      after?: () => Promise<void>;
      probe?: false;
      fixed?: true;
    }[] = [
      { name: 'eth_blockNumber (head)', bodies: () => [req('eth_blockNumber', [])], fixed: true },
      {
        name: 'eth_getBalance (cache)',
        bodies: () => [req('eth_getBalance', [signer.address, 'latest'])],
        fixed: true,
      },
      {
        name: 'eth_call',
        bodies: () => [req('eth_call', [{ to: address, data: outer.interface.encodeFunctionData('inner') }, 'latest'])],
      },
      {
        name: `eth_getLogs (${logsCount} logs)`,
        bodies: () => [req('eth_getLogs', [{ fromBlock: logsBlock, toBlock: logsBlock, address }])],
      },
      {
        name: 'eth_getFilterChanges empty',
        before: makeFilters,
        after: uninstallAll,
        bodies: pollBodies,
        probe: false,
        fixed: true,
      },
      {
        name: 'eth_getFilterChanges new blocks',
        before: async () => {
          await makeFilters();
          // A block with 3 logs every 100 ms, made on the node directly.
          let n = 10n;
          const data = (k: bigint) => outer.interface.encodeFunctionData('note', [k, ethers.id('poll'), 3n]);
          miner = setInterval(
            () =>
              void provider
                .send('eth_sendTransaction', [{ from: signer.address, to: address, data: data(n++), gas: '0x100000' }])
                .catch(() => undefined),
            100,
          );
        },
        after: async () => {
          clearInterval(miner);
          await uninstallAll();
        },
        bodies: pollBodies,
        probe: false,
      },
      { name: 'eth_getBlockByNumber final+txs', bodies: () => [req('eth_getBlockByNumber', [logsBlock, true])] },
    ];
    // Warm every path (JIT, sockets, the cache entries) before measuring.
    for (const t of sides) for (const c of cases.filter((x) => !x.before)) await load(t, c.bodies(t), 1);
    const [l1, l5] = loadavg();
    console.log(
      `${CONNECTIONS} connections (autocannon, static bodies), ${SECONDS} s per run, database ${process.env.DATABASE_HOST ? 'PostgreSQL' : 'PGlite'}, ` +
        `load average before: ${fmt(l1!)} (1 min) ${fmt(l5!)} (5 min) on ${cores()} cores; endpoint: ${entryName()}; logs block ${receipt.blockNumber}`,
    );
    const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
    for (const c of cases.filter((x) => !only || only.test(x.name))) {
      await c.before?.();
      // BENCH_ROUNDS: the sides take turns that many times; each round's ratios are to that round's anvil and floor.
      const rounds: Map<Target, Side>[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const r = new Map<Target, Side>();
        for (const t of sides) {
          const began = nowUs();
          r.set(t, await load(t, c.bodies(t), SECONDS));
          if (t === profiledSide) {
            windows.push([began, nowUs()]);
            profiledRequests += r.get(t)!.total;
          }
          if (t === floor) {
            floorWindows.push([began, nowUs()]);
            floorRequests += r.get(t)!.total;
          }
        }
        rounds.push(r);
      }
      console.log(ROUNDS > 1 ? `${c.name} (median of ${ROUNDS} rounds; ratios: median, min-max)` : c.name);
      for (const t of sides) printSide(t, rounds, direct, floor);
      if (c.fixed)
        await fixedRates(c.name, c.bodies, median(rounds.map((r) => r.get(floor)!.rps)), [
          direct,
          floor,
          uws,
          on,
          onUws,
        ]);
      await c.after?.();
    }
    const [a1] = loadavg();
    console.log(
      `\nload average after: ${fmt(a1!)} (1 min). Ratios are to anvil and to the node:http floor in the same run; answers checked before each run and sampled every 100 ms during it.`,
    );
    const probed = [direct, floor, on, off, onUws];
    if (PROBES > 0)
      console.log(
        `\nlatency probe: one request at a time over one kept-alive connection per side, sides taking turns (µs): ${probed.map((t) => t.name).join(' | ')}`,
      );
    for (const c of cases.filter((x) => PROBES > 0 && x.probe !== false && (!only || only.test(x.name)))) {
      const times = await latencyProbe(probed, c.bodies(direct)[0]!);
      console.log(
        `${c.name.padEnd(31)} ${times.map((s) => `p50 ${fmt(s.p50, 0).padStart(5)} p99 ${fmt(s.p99, 0).padStart(5)}`).join(' | ')}`,
      );
    }
  } finally {
    clearInterval(miner);
    await Promise.all([on.stop(), off.stop(), onUws.stop(), floor.stop(), uws.stop(), before?.stop()]);
    await anvil.stop();
  }
  const profile = summarizeProfile(profileDir, windows);
  const floorProfile = summarizeProfile(floorProfileDir, floorWindows);
  if (profile) {
    const perReq = (us: number) => fmt(us / Math.max(1, profiledRequests), 1).padStart(6);
    console.log(
      `\n${{ on: 'cache-on', off: 'cache-off', uws: 'uWS (cache-on)' }[profiled]} endpoint, --cpu-prof during its measured runs: ${fmt(profile.busyUs / 1000, 0)} ms on CPU for ${profiledRequests} requests: ${perReq(profile.busyUs)} µs/request; heaviest self time:`,
    );
    for (const [fn, us] of profile.top)
      console.log(`  ${fmt((100 * us) / profile.busyUs, 1).padStart(5)} %  ${perReq(us)}  ${fn}`);
    console.log('heaviest inclusive time (% of busy, µs per request):');
    for (const [fn, us] of profile.inclusive)
      console.log(`  ${fmt((100 * us) / profile.busyUs, 1).padStart(5)} %  ${perReq(us)}  ${fn}`);
    // Per module, beside the floor's profile of the same cases: Node's own layers and the kernel calls cost
    // both alike (the system calls are sampled as busy and grow with the machine's load), the rest is ours.
    const floorBy = new Map(floorProfile?.byModule ?? []);
    const perFloorReq = (us: number | undefined) =>
      us === undefined ? '     -' : fmt(us / Math.max(1, floorRequests), 1).padStart(6);
    console.log(
      `self time by module, µs per request: endpoint | floor (${floorProfile ? `${fmt(floorProfile.busyUs / Math.max(1, floorRequests), 1)} µs/request busy` : 'no profile'})`,
    );
    for (const [m, us] of profile.byModule) console.log(`  ${perReq(us)} | ${perFloorReq(floorBy.get(m))}  ${m}`);
  }
  rmSync(profileDir, { recursive: true, force: true });
  rmSync(floorProfileDir, { recursive: true, force: true });
}
