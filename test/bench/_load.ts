/**
 * The rpc bench's load: autocannon with static bodies (built once into request buffers, never per request,
 * and no answer read in JavaScript), so the load generator is not what bounds the figure. A case that needs
 * distinct bodies (a filter per connection) gets one autocannon instance of one connection per body. Answers
 * are checked on a sample instead: a probe on its own connection every SAMPLE_MS during the run and before
 * it, each answer parsed and required to be a JSON-RPC result.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { cpuSeconds } from './_rpc-endpoint.js';

export const CONNECTIONS = 32;
const SAMPLE_MS = 100;

export interface Target {
  name: string;
  url: string;
  /** Whose CPU time is read from /proc (with its children). */
  pid?: number;
}

export interface Side {
  rps: number;
  p50: number;
  p99: number;
  total: number;
  /** Non-2xx, socket errors and timeouts under load, plus sampled answers that were not results. */
  bad: number;
  sampled: number;
  /** CPU time of the side's process per request (µs), and the cores it kept busy on average. */
  cpuUsPerReq?: number;
  cores?: number;
  /** Cores autocannon (this process) used, and the machine's idle share during the run. */
  loaderCores: number;
  idle: number;
}

/** CPU time of the whole machine so far, from /proc/stat: idle (idle + iowait) and total, in ticks. */
export function machineTicks(): { idle: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { idle: cpu[3]! + cpu[4]!, total: cpu.reduce((a, b) => a + b, 0) };
}

/** One POST; the answer must parse as a JSON-RPC result (an error body is a wrong answer, not speed). */
export async function checkOnce(url: string, body: string): Promise<string | undefined> {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await res.text();
    const json = JSON.parse(text) as { result?: unknown; error?: unknown };
    return res.status === 200 && 'result' in json && json.error === undefined
      ? undefined
      : `${res.status} ${text.slice(0, 200)}`;
  } catch (err) {
    return (err as Error).message;
  }
}

function cannon(url: string, body: string, connections: number, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        connections,
        duration: seconds,
        pipelining: 1,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
  });
}

/**
 * `bodies.length` 1: one autocannon of CONNECTIONS connections; else one of a connection per body (so each
 * connection always sends the same body, e.g. polls its own filter).
 */
export async function load(target: Target, bodies: string[], seconds: number): Promise<Side> {
  // Every body answered right once before the load: a fast wrong answer must not count as speed.
  for (const b of bodies) {
    const wrong = await checkOnce(target.url, b);
    if (wrong) throw new Error(`${target.name}: not a result before the run: ${wrong}`);
  }
  let sampled = 0;
  let wrongSamples = 0;
  let stop = false;
  const sampler = (async () => {
    for (let i = 0; !stop; i++) {
      await new Promise((r) => setTimeout(r, SAMPLE_MS));
      if (stop) break;
      sampled++;
      if (await checkOnce(target.url, bodies[i % bodies.length]!)) wrongSamples++;
    }
  })();
  const cpuBefore = cpuSeconds(target.pid);
  const machine = machineTicks();
  const self = process.cpuUsage();
  const runs = await Promise.all(
    bodies.length === 1
      ? [cannon(target.url, bodies[0]!, CONNECTIONS, seconds)]
      : bodies.map((b) => cannon(target.url, b, 1, seconds)),
  );
  const selfUs = process.cpuUsage(self);
  const after = machineTicks();
  const cpu = cpuSeconds(target.pid) - cpuBefore;
  stop = true;
  await sampler;
  const total = runs.reduce((n, r) => n + r.requests.total, 0);
  const rps = runs.reduce((n, r) => n + r.requests.average, 0);
  const cpuUsPerReq = target.pid !== undefined && total > 0 ? (cpu * 1e6) / total : undefined;
  return {
    rps,
    // Several instances: the mean of their medians and the worst p99 (autocannon's histograms are per instance).
    p50: runs.reduce((n, r) => n + r.latency.p50, 0) / runs.length,
    p99: Math.max(...runs.map((r) => r.latency.p99)),
    total,
    bad: runs.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0) + wrongSamples,
    sampled,
    cpuUsPerReq,
    cores: cpuUsPerReq !== undefined ? (cpuUsPerReq * rps) / 1e6 : undefined,
    loaderCores: (selfUs.user + selfUs.system) / 1e6 / seconds,
    idle: (after.idle - machine.idle) / Math.max(1, after.total - machine.total),
  };
}

export interface Calibrator extends Target {
  pid: number;
  stop(): Promise<void>;
}

/** The floor server of `kind` (test/bench/_floor-server.mjs) in its own process. */
export async function startCalibrator(kind: 'node' | 'uws', nodeFlags: string[] = []): Promise<Calibrator> {
  const script = new URL('./_floor-server.mjs', import.meta.url).pathname;
  const child: ChildProcess = spawn(process.execPath, [...nodeFlags, script, kind], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`${kind} floor server exited with ${code}`)));
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    name: kind === 'node' ? 'floor node:http' : 'floor uWS',
    url,
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
