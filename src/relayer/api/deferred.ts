import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { problemText } from '../../common/http/problem.js';

export interface DeferredApiOptions {
  /** Builds the API (loads express, the validator and the spec, compiles the validators): ~0.75 s of CPU. */
  build(): Promise<RequestListener>;
  /** The longest the build waits for the process to fall idle, from the call. */
  maxWaitMs: number;
  /** Event-loop utilization over one sampling window below which the process counts as idle. */
  idleBelow?: number;
  /** The sampling window. */
  windowMs?: number;
  /** Told when the build fails: the relayer cannot serve its API, so it stops (fatal). */
  failed(err: Error): void;
}

export interface DeferredApi {
  /** Serves through the API once built; a request before that waits for the build (at most maxWaitMs and the build). */
  listener: RequestListener;
  /** Settles when the API is built (or its build failed). */
  built: Promise<void>;
  /** Shutdown: a build not yet started never starts, and requests waiting for it are answered 503. */
  cancel(): void;
}

// operator.ts's livenessHandler answers the same; it is not imported here because that module loads express.
const LIVE_BODY = JSON.stringify({ status: 'ok' });
const FAILED = { status: 500, body: problemText({ status: 500, detail: 'the relayer API could not be built' }) };
const STOPPING = { status: 503, body: problemText({ status: 503, detail: 'the relayer is stopping' }) };

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * The relayer's API built once the start's first round of work is out of the way. Building it took ~0.75 s of CPU on
 * the start path (express and the OpenAPI validator loaded, the spec's validators compiled), on the one thread that
 * also opens the database and sends the first claims. So the build waits until the event loop's utilization over a
 * window falls below `idleBelow` (the backlog's first claims are sent, or there is nothing to do), and never longer
 * than `maxWaitMs`. Meanwhile GET /health/live is answered as the API would answer it (the process is alive), and every
 * other request waits for the build, then is served: nothing is refused or lost, it is only answered later.
 */
export function deferredApi(o: DeferredApiOptions): DeferredApi {
  const idleBelow = o.idleBelow ?? 0.5;
  const windowMs = o.windowMs ?? 100;
  let app: RequestListener | undefined;
  let failure: Error | undefined;
  let cancelled = false;
  let timer: NodeJS.Timeout | undefined;
  let startBuild: () => void = () => {};
  const started = new Promise<void>((resolve) => (startBuild = resolve));
  const deadline = performance.now() + o.maxWaitMs;

  let last = performance.eventLoopUtilization();
  const sample = () => {
    const now = performance.eventLoopUtilization();
    const window = performance.eventLoopUtilization(now, last);
    last = now;
    if (window.utilization < idleBelow || performance.now() >= deadline) return startBuild();
    timer = setTimeout(sample, windowMs);
  };
  timer = setTimeout(sample, windowMs);

  const built = started.then(async () => {
    if (cancelled) return;
    try {
      app = await o.build();
    } catch (err) {
      failure = err instanceof Error ? err : new Error(String(err));
      o.failed(failure);
    }
  });

  const serveFailure = (res: ServerResponse) => {
    const { status, body } = failure ? FAILED : STOPPING;
    send(res, status, 'application/problem+json', body);
  };
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    if (app) return app(req, res);
    if (failure || cancelled) return serveFailure(res);
    if (req.method === 'GET' && req.url === '/health/live')
      return send(res, 200, 'application/json; charset=utf-8', LIVE_BODY);
    // The body is not read meanwhile: it waits in the socket (and TCP's window), not in our memory.
    void built.then(() => (app ? app(req, res) : serveFailure(res)));
  };
  return {
    listener,
    built,
    cancel: () => {
      if (app || failure) return;
      cancelled = true;
      clearTimeout(timer);
      startBuild();
    },
  };
}
