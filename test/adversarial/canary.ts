import { request as httpRequest, Agent } from 'node:http';
import { waitFor } from '../helpers/chain.js';

/**
 * A normal client that keeps using a service while an adversarial recipe runs against it. Every
 * adversarial test starts one, runs its recipe, stops it and asserts that it was served throughout:
 * no failed request, and its p99 printed so a slowdown is visible in the log (no timing assertion).
 */
export interface CanaryRequest {
  method?: 'GET' | 'POST';
  url: string;
  /** A fixed body, or one made per request (a fresh address, so no cache can answer for the node). */
  body?: string | (() => string);
  headers?: Record<string, string>;
  /** The canary's own source address (e.g. 127.0.0.2: another client than an attacker on 127.0.0.1). */
  localAddress?: string;
  /** Decides whether an answer counts as served (default: HTTP 200). */
  ok?: (status: number, body: string) => boolean;
}

export interface CanaryReport {
  name: string;
  sent: number;
  failed: number;
  failures: string[];
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface Canary {
  /** Requests answered or failed so far. */
  sent(): number;
  /**
   * Resolves once the canary has been served (its keep-alive socket is open, as a long-lived client's is when an
   * attack starts); fails after `timeoutMs`, naming what it got meanwhile.
   */
  served(timeoutMs?: number): Promise<void>;
  stop(): Promise<CanaryReport>;
}

/**
 * The canary requests a flood lasts for by default (floodWindow): 30 at the canary's 50 ms interval is 2-6 s of
 * flood on this machine, against 8 s of fixed duration before, which sampled 39-119 (2026-11-29).
 */
export const UNDER_ATTACK = 30;

/** How long a flood goes on: see floodWindow. */
export interface FloodWindow {
  /** Whether the flood goes on: its lanes loop `while (window.open())`. */
  open(): boolean;
  /** Keeps the flood going until `check` (something asserted mid-attack) settles, and gives its result. */
  hold<T>(check: Promise<T>): Promise<T>;
}

/**
 * A flood that lasts until the canary has been served `requests` more times and every check held open has
 * settled, for at most `maxMs`: each recipe samples the same number of normal requests under attack whether the
 * machine is quiet or loaded, and a check made mid-attack (a transaction mined, a receipt served) ends before the
 * attack does (unless `maxMs` runs out first). A fixed duration did neither: on a quiet machine it flooded longer
 * than any assertion needed (both cores busy for 8 s per recipe), on a loaded one a receipt could come after the
 * flood had ended.
 */
export function floodWindow(canary: Canary, requests = UNDER_ATTACK, maxMs = 30_000): FloodWindow {
  const target = canary.sent() + requests;
  const deadline = Date.now() + maxMs;
  let held = 0;
  return {
    open: () => Date.now() < deadline && (held > 0 || canary.sent() < target),
    async hold(check) {
      held++;
      try {
        return await check;
      } finally {
        held--;
      }
    },
  };
}

/** One request at a time, every `intervalMs`, each bounded by `timeoutMs` (a hang counts as a failure). */
export function startCanary(
  name: string,
  req: CanaryRequest,
  options: { intervalMs?: number; timeoutMs?: number } = {},
): Canary {
  const intervalMs = options.intervalMs ?? 50;
  const timeoutMs = options.timeoutMs ?? 10_000;
  // Its own keep-alive connection, opened before the recipe starts, as a long-lived client would have.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  const failures: string[] = [];
  let stopped = false;

  const once = () =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      const url = new URL(req.url);
      const r = httpRequest(
        url,
        {
          method: req.method ?? 'GET',
          agent,
          localAddress: req.localAddress,
          timeout: timeoutMs,
          headers: { 'content-type': 'application/json', ...req.headers },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (err) => {
            failures.push(`response error: ${err.message}`);
            resolve();
          });
          res.on('end', () => {
            const body = Buffer.concat(chunks).toString();
            const status = res.statusCode ?? 0;
            const accepted = req.ok ? req.ok(status, body) : status === 200;
            if (accepted) latencies.push(performance.now() - started);
            else failures.push(`HTTP ${status}: ${body.slice(0, 200)}`);
            resolve();
          });
        },
      );
      r.on('timeout', () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      r.on('error', (err) => {
        failures.push(`request error: ${err.message}`);
        resolve();
      });
      r.end(typeof req.body === 'function' ? req.body() : req.body);
    });

  const loop = (async () => {
    while (!stopped) {
      await once();
      if (!stopped) await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();

  return {
    sent: () => latencies.length + failures.length,
    async served(waitMs = 10_000) {
      await waitFor(
        () => `canary ${name} to be served (${failures.length} failed: ${failures[0]})`,
        () => latencies.length > 0,
        waitMs,
        10,
      );
    },
    async stop() {
      stopped = true;
      await loop;
      agent.destroy();
      const sorted = [...latencies].sort((a, b) => a - b);
      const at = (q: number) =>
        sorted.length === 0 ? NaN : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN);
      const report: CanaryReport = {
        name,
        sent: latencies.length + failures.length,
        failed: failures.length,
        failures: failures.slice(0, 5),
        p50Ms: round(at(0.5)),
        p99Ms: round(at(0.99)),
        maxMs: round(sorted[sorted.length - 1] ?? NaN),
      };
      process.stdout.write(
        `canary ${name}: ${report.sent} requests, ${report.failed} failed, p50 ${report.p50Ms} ms, p99 ${report.p99Ms} ms, max ${report.maxMs} ms\n`,
      );
      return report;
    },
  };
}

const round = (n: number) => Math.round(n * 10) / 10;
