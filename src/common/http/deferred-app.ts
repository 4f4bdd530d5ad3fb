import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import express from 'express';
import type { Logger } from '../log.js';
import { livenessHandler, metricsHandler, readinessHandler, type OperatorOptions } from './operator.js';
import { sendProblem } from './problem.js';

/** How often the event loop's business is looked at, and under what share of busy time the full build starts. */
const IDLE_CHECK_MS = 250;
const IDLE_BELOW = 0.5;

export interface DeferredAppOptions {
  /** The full app (spec parsed, validators compiled); called once. */
  build: () => Promise<RequestListener>;
  /** What the three operator routes answer while the full app is not built (the same handlers it binds). */
  operator: OperatorOptions;
  logger: Logger;
  /** Built at the latest this long after the start, however busy the process (default 30 s). */
  latestMs?: number;
}

export interface DeferredApp {
  /** The server's request listener. */
  handler: RequestListener;
  /** Builds the full app now, if not done yet (the first request another route than the three gets does too). */
  build(): Promise<RequestListener>;
  /** Stops waiting for an idle moment (the server closes). */
  stop(): void;
}

const QUICK = new Set(['/health/live', '/health/ready', '/metrics']);

/**
 * A spec-driven API whose build waits until the process has time for it. Parsing the spec and compiling its
 * validators cost ~0.4 s of CPU on the one thread that a service's start-up also needs (the relayer's first
 * claims after a restart waited for it), while probes and scrapes need none of it. Until the full app is built,
 * GET /health/live, /health/ready and /metrics without a query string are answered by the same handlers the spec
 * binds to them (same bodies and codes); any other request builds the full app first and is served by it, so no
 * request is answered differently, only later. The build starts by itself on the first moment the event loop is
 * less than half busy, at the latest after `latestMs`.
 */
export function deferredApp(options: DeferredAppOptions): DeferredApp {
  const quick = express();
  quick.disable('x-powered-by');
  quick.set('etag', false);
  quick.get('/health/live', livenessHandler());
  quick.get('/health/ready', readinessHandler(options.operator.readiness));
  quick.get('/metrics', metricsHandler(options.operator.metrics));

  const failed = express();
  failed.disable('x-powered-by');
  failed.use((req, res) => sendProblem(res, { status: 500, detail: 'the API could not be built; the next request tries again', instance: req.originalUrl }));

  let full: RequestListener | undefined;
  let building: Promise<RequestListener> | undefined;
  // A failed build is not kept: the next request (not the idle timer, which stops) tries again.
  const build = () =>
    (building ??= options.build().then(
      (app) => {
        full = app;
        stop();
        return app;
      },
      (err: unknown) => {
        building = undefined;
        stop();
        throw err;
      },
    ));

  // Idle: the event loop was busy less than half of the last interval (the pipeline's first round is over).
  let last = performance.eventLoopUtilization();
  const started = Date.now();
  const latestMs = options.latestMs ?? 30_000;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    if (busy < IDLE_BELOW || Date.now() - started >= latestMs) {
      build().catch((err: unknown) => options.logger.error({ err }, 'building the HTTP API failed; the next request tries again'));
    }
  }, IDLE_CHECK_MS);
  timer.unref();
  function stop() {
    clearInterval(timer);
  }

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    if (full) return void full(req, res);
    if (req.method === 'GET' && QUICK.has(req.url ?? '')) return void quick(req, res);
    build().then(
      (app) => app(req, res),
      (err: unknown) => {
        options.logger.error({ err }, 'building the HTTP API failed');
        failed(req, res);
      },
    );
  };
  return { handler, build, stop };
}
