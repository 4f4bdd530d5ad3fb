/**
 * `npm run bench -- rpc`: the endpoint (`l2stack rpc`, each in its own process; embedded PGlite unless
 * DATABASE_HOST is set) against anvil directly, in the same run, under autocannon with 32 keep-alive
 * connections on every side. Two endpoints run: answer cache on (RPC_CACHE_BYTES default) and off
 * (RPC_CACHE_BYTES=0). Cases: eth_blockNumber, eth_getBalance, eth_call, eth_getLogs (one block of
 * 1,000 logs), eth_getFilterChanges with nothing new, eth_getFilterChanges while blocks with logs arrive
 * (32 filters per side, polled round-robin: autocannon gives each request a fresh context, so a filter's
 * polls come over any connection and, under RPC_WORKERS, alternate between processes), and a finalized
 * eth_getBlockByNumber with full transactions.
 * Printed per case: requests/s of each side, the ratio to direct anvil, p50/p99 of each side, and the
 * CPU the endpoint process used per request (from /proc; the cache-off endpoint also runs with
 * --cpu-prof and its profile's heaviest functions are printed; BENCH_PROFILE=on profiles the cache-on
 * endpoint instead). BENCH_SECONDS (default 4) per run; BENCH_ONLY=<regex> runs only the matching cases.
 * Then, for every case but the filter polls, a latency probe: BENCH_PROBE (default 500) requests per side, one
 * at a time over one kept-alive connection each, the sides taking turns; p50/p99 in µs and the p50 the endpoint
 * adds (autocannon reports whole milliseconds, too coarse for a sub-millisecond hop).
 * BENCH_RPC_SCALE=1,2 runs only the scaling part instead (see scaling()).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { ethers } from 'ethers';
import { chain, deployOuter, result, wallet } from '../rpc/helpers.js';
import { cpuSeconds, startEndpoint, type RunningEndpoint } from './_rpc-endpoint.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = 32;

interface Side {
  rps: number;
  p50: number;
  p99: number;
  total: number;
  bad: number;
  cpuUsPerReq?: number;
}

interface Target {
  name: string;
  url: string;
  pid?: number;
}

/** autocannon against `target`; `body(connection)` is each connection's request body. */
async function load(target: Target, body: (connection: number) => string, seconds = SECONDS): Promise<Side> {
  let next = 0;
  const cpuBefore = cpuSeconds(target.pid);
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    autocannon(
      {
        url: target.url,
        connections: CONNECTIONS,
        duration: seconds,
        pipelining: 1,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        requests: [
          {
            setupRequest: (req, context) => {
              const ctx = context as { connection?: number };
              ctx.connection ??= next++;
              return { ...req, body: body(ctx.connection) };
            },
          },
        ],
        // Every answer must be a JSON-RPC result: an error body counts as a mismatch, not as speed.
        verifyBody: (text: string) => text.includes('"result"') && !text.includes('"error"'),
      } as autocannon.Options,
      (err, res) => (err ? reject(err) : resolve(res)),
    );
  });
  const cpu = cpuSeconds(target.pid) - cpuBefore;
  const total = r.requests.total;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    total,
    bad: r.non2xx + r.errors + (r as { mismatches?: number }).mismatches! + r.timeouts,
    cpuUsPerReq: target.pid !== undefined && total > 0 ? (cpu * 1e6) / total : undefined,
  };
}

/** An endpoint of this bench: the shared launcher with the bench's limits, named by its cache setting. */
async function startBenchEndpoint(upstream: string, env: Record<string, string>, nodeFlags: string[] = []): Promise<Target & RunningEndpoint> {
  const running = await startEndpoint(
    upstream,
    {
      RPC_MAX_LOGS_RESULTS: '10000',
      // The filter cases make 32 filters per case on each endpoint (uninstalled after it).
      RPC_MAX_FILTERS_PER_CLIENT: '1000',
      ...env,
    },
    nodeFlags,
  );
  return { ...running, name: env.RPC_CACHE_BYTES === '0' ? 'cache off' : `cache on${env.RPC_WORKERS ? `, ${env.RPC_WORKERS} workers` : ''}` };
}

/** Self time per function of a .cpuprofile, heaviest first, and the busy (non-idle) total in µs. */
/** Monotonic µs (the clock V8 stamps profile samples with, on Linux the same in every process). */
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

function summarizeProfile(
  dir: string,
  windows: [number, number][],
): { busyUs: number; top: [string, number][]; inclusive: [string, number][]; byModule: [string, number][] } | undefined {
  // One file per process: with RPC_WORKERS every worker writes its own (they inherit --cpu-prof), summed here.
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) return undefined;
  type Profile = {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
  };
  const frameKey = (n: Profile['nodes'][number]) => {
    const where = n.callFrame.url ? n.callFrame.url.replace(/^.*\/(node_modules\/[^/]+|src)\//, '$1/') : '';
    return `${n.callFrame.functionName || '(anonymous)'} ${where}:${n.callFrame.lineNumber + 1}`;
  };
  const self = new Map<string, number>();
  // Inclusive time: each sample counts once for every distinct function on its stack.
  const inclusive = new Map<string, number>();
  const byModule = new Map<string, number>();
  let busyUs = 0;
  // Only samples taken while a measured run was going (start-up and set-up left out).
  const measured = (t: number) => windows.some(([a, b]) => t >= a && t <= b);
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    let at = profile.startTime;
    profile.samples.forEach((id, i) => {
      const n = byId.get(id)!;
      const us = profile.timeDeltas[i] ?? 0;
      at += us;
      if (!measured(at)) return;
      const fn = n.callFrame.functionName;
      if (fn === '(idle)' || fn === '(program)') return;
      busyUs += us;
      const where = n.callFrame.url ? n.callFrame.url.replace(/^.*\/(node_modules\/[^/]+|src)\//, '$1/') : '';
      const key = frameKey(n);
      self.set(key, (self.get(key) ?? 0) + us);
      const onStack = new Set<string>();
      for (let up: number | undefined = id; up !== undefined; up = parent.get(up)) onStack.add(frameKey(byId.get(up)!));
      for (const k of onStack) inclusive.set(k, (inclusive.get(k) ?? 0) + us);
      // Where the time goes by layer: node's own (http, net, streams), the kernel calls it makes, ours, libraries.
      const module = where === '' ? `native ${fn || '(anonymous)'}` : where.startsWith('node:') ? where.replace(/:\d+$/, '').replace(/^(node:internal\/[^/]+).*/, '$1') : where.replace(/:\d+$/, '');
      byModule.set(module, (byModule.get(module) ?? 0) + us);
    });
  }
  const top = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12);
  const inclusiveTop = [...inclusive.entries()].filter(([k]) => !k.startsWith('(root)')).sort((a, b) => b[1] - a[1]).slice(0, 30);
  return { busyUs, top, inclusive: inclusiveTop, byModule: [...byModule.entries()].sort((a, b) => b[1] - a[1]).slice(0, 14) };
}

const fmt = (n: number, d = 2) => n.toFixed(d);

const PROBES = Number(process.env.BENCH_PROBE ?? 500);

/** One POST over `agent`, resolving with the microseconds until the whole answer was read. */
function timedPost(url: URL, agent: Agent, body: string): Promise<number> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => (text.includes('"result"') && !text.includes('"error"') ? resolve(Number(process.hrtime.bigint() - started) / 1_000) : reject(new Error(`not a result: ${text.slice(0, 200)}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Unloaded latency: PROBES requests per target, one at a time, each target over its own kept-alive connection,
 * the targets taking turns (so a slow moment of the machine hits all of them alike). p50/p99 in µs.
 */
async function latencyProbe(targets: Target[], body: string): Promise<{ p50: number; p99: number }[]> {
  const agents = targets.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  const urls = targets.map((t) => new URL(t.url));
  const times: number[][] = targets.map(() => []);
  try {
    // A few unmeasured rounds open the connections and warm the path.
    for (let i = 0; i < 20 + PROBES; i++) {
      for (const [k] of targets.entries()) {
        const us = await timedPost(urls[k]!, agents[k]!, body);
        if (i >= 20) times[k]!.push(us);
      }
    }
  } finally {
    for (const a of agents) a.destroy();
  }
  return times.map((ts) => {
    const sorted = ts.sort((a, b) => a - b);
    return { p50: sorted[Math.floor(sorted.length * 0.5)]!, p99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]! };
  });
}

/** CPU time of the whole machine so far, from /proc/stat: idle (idle + iowait) and total, in ticks. */
function machineTicks(): { idle: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { idle: cpu[3]! + cpu[4]!, total: cpu.reduce((a, b) => a + b, 0) };
}

/**
 * BENCH_RPC_SCALE=1,2 (worker counts; 1 = one process, RPC_WORKERS unset; more needs DATABASE_HOST): answers
 * that never reach anvil (the head's number, a balance at the head, a finalized block from the cache), so
 * the endpoint alone bounds them, served by one process and then by several, each under the same autocannon
 * load. Printed per run: requests/s, the gain over one process, the endpoint's CPU (workers included), this
 * process's (autocannon's) and the machine's idle share: a second worker can only help while a core is idle.
 */
async function scaling(counts: number[]): Promise<void> {
  const { anvil, provider } = await chain();
  const signer = wallet(0, provider);
  await provider.send('anvil_mine', ['0x80']);
  const finalized = (await result(anvil.url, 'eth_getBlockByNumber', ['finalized', false])) as { number: string };
  const req = (method: string, params: unknown[]) => () => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const cases = [
    { name: 'eth_blockNumber (head)', body: req('eth_blockNumber', []) },
    { name: 'eth_getBalance latest (cache)', body: req('eth_getBalance', [signer.address, 'latest']) },
    { name: 'eth_getBlockByNumber final (cache)', body: req('eth_getBlockByNumber', [finalized.number, true]) },
  ];
  const [l1] = loadavg();
  console.log(`scaling: ${CONNECTIONS} connections, ${SECONDS} s per run, database ${process.env.DATABASE_HOST ? 'PostgreSQL' : 'PGlite'}, load before ${fmt(l1!)}, ${readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm)?.length ?? '?'} cores`);
  const baseline = new Map<string, number>();
  try {
    for (const workers of counts) {
      const endpoint = await startBenchEndpoint(anvil.url, workers > 1 ? { RPC_WORKERS: String(workers) } : {});
      try {
        for (const c of cases) await load(endpoint, c.body, 1); // warm: JIT, sockets, the cache entry
        for (const c of cases) {
          const machine = machineTicks();
          const self = process.cpuUsage();
          const r = await load(endpoint, c.body);
          const after = machineTicks();
          const selfUs = process.cpuUsage(self);
          const idle = (after.idle - machine.idle) / Math.max(1, after.total - machine.total);
          const cores = (r.cpuUsPerReq ?? 0) * r.rps / 1e6;
          if (workers === counts[0]) baseline.set(c.name, r.rps);
          const gain = r.rps / baseline.get(c.name)!;
          console.log(
            `${String(workers).padStart(2)} process${workers > 1 ? 'es' : '  '} ${c.name.padEnd(36)} ${fmt(r.rps, 0).padStart(6)} req/s ${fmt(gain)}x  p50 ${fmt(r.p50)} ms  ` +
              `endpoint ${fmt(cores)} cores (${fmt(r.cpuUsPerReq ?? 0, 0)} µs/req)  autocannon ${fmt((selfUs.user + selfUs.system) / 1e6 / SECONDS)} cores  machine idle ${fmt(100 * idle, 0)} %${r.bad > 0 ? `  BAD ${r.bad}/${r.total}` : ''}`,
          );
        }
      } finally {
        await endpoint.stop();
      }
    }
  } finally {
    await anvil.stop();
  }
}

export async function main(): Promise<void> {
  if (process.env.BENCH_RPC_SCALE) return scaling(process.env.BENCH_RPC_SCALE.split(',').map(Number));
  const { anvil, provider } = await chain();
  const signer = wallet(0, provider);
  const outer = await deployOuter(signer);
  const address = await outer.getAddress();
  const tx = (await outer.getFunction('note')(1n, ethers.id('bench'), 1000n, { gasLimit: 29_000_000n })) as ethers.TransactionResponse;
  const receipt = (await tx.wait())!;
  // Enough blocks on top that the logs block is final for anvil (its finalized tag trails the head).
  await provider.send('anvil_mine', ['0x80']);
  const profileDir = mkdtempSync(join(tmpdir(), 'l2stack-rpc-prof-'));
  // BENCH_RPC_WORKERS=<n>: the cache-on endpoint serves from n processes (RPC_WORKERS; needs DATABASE_HOST).
  // BENCH_PROFILE=on: the cache-on endpoint runs with --cpu-prof instead of the cache-off one (its answers
  // from the head and the cache are pure per-request overhead). With RPC_WORKERS the primary (serves nothing)
  // and its workers each write a profile; they are summed.
  const profileOn = process.env.BENCH_PROFILE === 'on';
  const profileFlags = ['--cpu-prof', `--cpu-prof-dir=${profileDir}`];
  const cached = await startBenchEndpoint(anvil.url, process.env.BENCH_RPC_WORKERS ? { RPC_WORKERS: process.env.BENCH_RPC_WORKERS } : {}, profileOn ? profileFlags : []);
  const uncached = await startBenchEndpoint(anvil.url, { RPC_CACHE_BYTES: '0' }, profileOn ? [] : profileFlags);
  const direct: Target = { name: 'anvil', url: anvil.url };
  let miner: NodeJS.Timeout | undefined;
  let profiledRequests = 0;
  const windows: [number, number][] = [];
  try {
    const logsBlock = `0x${receipt.blockNumber.toString(16)}`;
    const logsCount = ((await result(cached.url, 'eth_getLogs', [{ fromBlock: logsBlock, toBlock: logsBlock, address }])) as unknown[]).length;
    const finalized = (await result(anvil.url, 'eth_getBlockByNumber', ['finalized', false])) as { number: string };
    const req = (method: string, params: unknown[]) => () => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
    const filtersOn = async (url: string, criteria: unknown) =>
      Promise.all(Array.from({ length: CONNECTIONS }, () => result(url, 'eth_newFilter', [criteria]) as Promise<string>));
    const filterIds = new Map<string, string[]>();
    const uninstallAll = async () => {
      for (const [url, ids] of filterIds) for (const id of ids) await result(url, 'eth_uninstallFilter', [id]);
      filterIds.clear();
    };
    const pollBody = (url: string) => (c: number) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getFilterChanges', params: [filterIds.get(url)![c % CONNECTIONS]] });
    const cases: { name: string; body: (t: Target) => (c: number) => string; before?: () => Promise<void>; after?: () => Promise<void>; probe?: false }[] = [
      { name: 'eth_blockNumber', body: () => req('eth_blockNumber', []) },
      { name: 'eth_getBalance', body: () => req('eth_getBalance', [signer.address, 'latest']) },
      { name: 'eth_call', body: () => req('eth_call', [{ to: address, data: outer.interface.encodeFunctionData('inner') }, 'latest']) },
      { name: `eth_getLogs (${logsCount} logs)`, body: () => req('eth_getLogs', [{ fromBlock: logsBlock, toBlock: logsBlock, address }]) },
      {
        name: 'eth_getFilterChanges empty',
        before: async () => {
          for (const t of [direct, cached, uncached]) filterIds.set(t.url, await filtersOn(t.url, { address }));
        },
        after: () => uninstallAll(),
        body: (t) => pollBody(t.url),
        probe: false,
      },
      {
        name: 'eth_getFilterChanges new blocks',
        before: async () => {
          for (const t of [direct, cached, uncached]) filterIds.set(t.url, await filtersOn(t.url, { address }));
          // A block with 3 logs every 100 ms, made on the node directly.
          let n = 10n;
          const data = (k: bigint) => outer.interface.encodeFunctionData('note', [k, ethers.id('poll'), 3n]);
          const from = signer.address;
          miner = setInterval(() => {
            void provider.send('eth_sendTransaction', [{ from, to: address, data: data(n++), gas: '0x100000' }]).catch(() => undefined);
          }, 100);
        },
        after: async () => {
          clearInterval(miner);
          await uninstallAll();
        },
        body: (t) => pollBody(t.url),
        probe: false,
      },
      { name: 'eth_getBlockByNumber final+txs', body: () => req('eth_getBlockByNumber', [logsBlock, true]) },
    ];
    // Warm every path (JIT, sockets) before measuring.
    for (const t of [direct, cached, uncached]) await load(t, req('eth_blockNumber', []), 1);
    const [l1, l5] = loadavg();
    console.log(
      `${CONNECTIONS} connections (autocannon), ${SECONDS} s per run, database ${process.env.DATABASE_HOST ? 'PostgreSQL' : 'PGlite'}, ` +
        `${process.env.BENCH_RPC_WORKERS ? `"on" = RPC_WORKERS=${process.env.BENCH_RPC_WORKERS}, ` : ''}load average before: ${fmt(l1!)} (1 min) ${fmt(l5!)} (5 min) on ${readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm)?.length ?? '?'} cores; ` +
        `finalized block ${BigInt(finalized.number)}, logs block ${receipt.blockNumber}`,
    );
    const rows: string[] = [];
    // BENCH_ONLY=<regex>: only the matching cases (to profile one method at a time).
    const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
    for (const c of cases.filter((x) => !only || only.test(x.name))) {
      await c.before?.();
      const d = await load(direct, c.body(direct));
      let began = nowUs();
      const on = await load(cached, c.body(cached));
      if (profileOn) windows.push([began, nowUs()]);
      began = nowUs();
      const off = await load(uncached, c.body(uncached));
      if (!profileOn) windows.push([began, nowUs()]);
      profiledRequests += (profileOn ? on : off).total;
      await c.after?.();
      const side = (s: Side) =>
        `${fmt(s.rps, 0).padStart(6)} req/s ${fmt(s.rps / d.rps).padStart(5)}x p50 ${fmt(s.p50)} (+${fmt(s.p50 - d.p50)}) p99 ${fmt(s.p99)} (+${fmt(s.p99 - d.p99)}) ms` +
        `${s.cpuUsPerReq !== undefined ? ` cpu ${fmt(s.cpuUsPerReq, 0)} µs/req` : ''}${s.bad > 0 ? ` BAD ${s.bad}/${s.total}` : ''}`;
      const row = `${c.name.padEnd(31)} anvil ${fmt(d.rps, 0).padStart(6)} req/s p50 ${fmt(d.p50)} p99 ${fmt(d.p99)} ms${d.bad > 0 ? ` BAD ${d.bad}/${d.total}` : ''}\n${''.padEnd(31)} on  ${side(on)}\n${''.padEnd(31)} off ${side(off)}`;
      rows.push(row);
      console.log(row);
    }
    const [a1] = loadavg();
    console.log(`\nload average after: ${fmt(a1!)} (1 min). Ratios are endpoint/anvil in the same run; "+x" is the latency the endpoint adds.`);
    console.log(`\nlatency probe: ${PROBES} requests per side, one at a time over one kept-alive connection each, sides taking turns (µs):`);
    for (const c of cases.filter((x) => x.probe !== false && (!only || only.test(x.name)))) {
      const [d, on, off] = await latencyProbe([direct, cached, uncached], c.body(direct)(0));
      const side = (s: { p50: number; p99: number }) => `p50 ${fmt(s.p50, 0).padStart(6)} (+${fmt(s.p50 - d!.p50, 0)}) p99 ${fmt(s.p99, 0).padStart(6)}`;
      console.log(`${c.name.padEnd(31)} anvil p50 ${fmt(d!.p50, 0).padStart(6)} p99 ${fmt(d!.p99, 0).padStart(6)} | on ${side(on!)} | off ${side(off!)}`);
    }
  } finally {
    clearInterval(miner);
    await cached.stop();
    await uncached.stop();
    await anvil.stop();
  }
  const profile = summarizeProfile(profileDir, windows);
  if (profile) {
    console.log(`\n${profileOn ? 'cache-on' : 'cache-off'} endpoint, --cpu-prof during the measured runs: ${fmt(profile.busyUs / 1000, 0)} ms on CPU for ${profiledRequests} requests: ${fmt(profile.busyUs / Math.max(1, profiledRequests), 1)} µs/request; heaviest self time:`);
    const perReq = (us: number) => fmt(us / Math.max(1, profiledRequests), 1).padStart(6);
    for (const [fn, us] of profile.top) console.log(`  ${fmt((100 * us) / profile.busyUs, 1).padStart(5)} %  ${perReq(us)}  ${fn}`);
    console.log('heaviest inclusive time (% of busy, µs per request):');
    for (const [fn, us] of profile.inclusive) console.log(`  ${fmt((100 * us) / profile.busyUs, 1).padStart(5)} %  ${perReq(us)}  ${fn}`);
    console.log('self time by module (µs per request):');
    for (const [m, us] of profile.byModule) console.log(`  ${fmt((100 * us) / profile.busyUs, 1).padStart(5)} %  ${fmt(us / Math.max(1, profiledRequests), 1).padStart(6)}  ${m}`);
  }
  rmSync(profileDir, { recursive: true, force: true });
}
