import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Registry } from 'prom-client';
import { clientAddress } from '../common/http/client-address.js';
import { rawHeader } from '../common/http/raw-header.js';
import type { Logger } from '../common/log.js';
import { mountOperatorRoutes, operatorListener, redactHosts, type Check } from '../common/http/operator.js';
import { slotCounter } from '../common/metric-slots.js';
import { andThen, type Awaitable, type CallTarget } from './types.js';
import { errorBody, handleBody, type Reply } from './envelope.js';
import { LARGE_ANSWER_CHARS } from './upstream/raw-json.js';
import { RpcCodes } from './errors.js';
import { allowListCalls, isRpcPath, requestKey, type KeyAccess } from './keys/access.js';
import { replyCost, type RateLimiter } from './ratelimit.js';
import { ResponseBudget } from './response-budget.js';

export interface RpcAppOptions {
  dispatcher: CallTarget;
  limiter: RateLimiter;
  maxBatch: number;
  maxBodyBytes: number;
  /** RPC_MAX_RESPONSE_BYTES: byte budget of one reply (response-budget.ts). */
  maxResponseBytes?: number;
  /** RPC_RATE_LIMIT_BYTES_PER_UNIT: answers are charged to the client's bucket after the reply (ratelimit.ts). */
  rateLimitBytesPerUnit?: number;
  /** RPC_RATE_LIMIT_MS_PER_UNIT: and so is the time its calls kept the node executing (evm-bounds.ts). */
  rateLimitMsPerUnit?: number;
  trustedProxyHops: number;
  /** RPC_MAX_JSON_DEPTH (envelope.ts); undefined: the envelope's default. */
  maxJsonDepth?: number;
  metrics: Registry;
  logger: Logger;
  /**
   * The checks of /health/ready (src/common/http/operator.ts), in a fixed order. `public`: what anyone may
   * read (no internal host, URL or driver message); `operator`: full detail, for the operator port only.
   */
  readiness(view: ReadinessView): Promise<Check[]>;
  /**
   * Whether /metrics and /health/* are served on this (public) listener. False when RPC_OPERATOR_PORT
   * serves them (operatorListener): then they are 404 here.
   */
  operatorRoutes?: boolean;
  /** RPC_CORS_ORIGINS: '*' (default), or the origins echoed back (empty: no CORS headers at all). */
  corsOrigins?: '*' | readonly string[];
  /** API keys (POST /v1/<key> or x-api-key): their own limits and allow-lists; without it every request is anonymous. */
  access?: KeyAccess;
}

const JSON_TYPE = 'application/json';
export type ReadinessView = 'public' | 'operator';

/**
 * The CORS headers of one JSON-RPC answer as a flat list (see send). '*' is the deliberate default of a
 * public endpoint: dapps call it from any page, and nothing rides on cookies (a key is in the URL or a
 * header the page itself sends). A list echoes only a listed Origin, with Vary so caches keep them apart.
 */
export function corsPolicy(origins: '*' | readonly string[]): (origin: string | undefined) => string[] {
  if (origins === '*') {
    const any = ['access-control-allow-origin', '*'];
    return () => any;
  }
  if (origins.length === 0) return () => [];
  const allowed = new Set(origins);
  const vary = ['vary', 'Origin'];
  return (origin) => (origin !== undefined && allowed.has(origin) ? ['access-control-allow-origin', origin, 'vary', 'Origin'] : vary);
}

/** The public port's readiness: the service's public view, with any host or URL a check let slip cut out. */
const publicReadiness = (readiness: (view: ReadinessView) => Promise<Check[]>) => async () =>
  (await readiness('public')).map((c) => (c.detail === undefined ? c : { ...c, detail: redactHosts(c.detail) }));

/** The operator port's listener: /metrics and /health/* with full detail, nothing else, no CORS. */
export const createRpcOperatorApp = (o: Pick<RpcAppOptions, 'metrics' | 'readiness'>): RequestListener =>
  operatorListener({ metrics: o.metrics, readiness: () => o.readiness('operator') });

/**
 * Reads the body up to `limit` bytes and hands it to `done` (undefined when it is larger: the caller answers
 * 413) in the stream's own event, not through a promise (types.ts, Awaitable); `failed` on a stream error.
 */
function readBody(req: IncomingMessage, limit: number, done: (text: string | undefined) => void, failed: (err: unknown) => void): void {
  const declared = Number(rawHeader(req, 'content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit) return done(undefined);
  const chunks: Buffer[] = [];
  let size = 0;
  // Once the body is handed on (or refused), a later stream error is the client's leaving, not a failure.
  let settled = false;
  req.on('data', (c: Buffer) => {
    if (settled) return;
    size += c.length;
    if (size > limit) {
      settled = true;
      chunks.length = 0;
      done(undefined);
      return;
    }
    chunks.push(c);
  });
  req.on('end', () => {
    if (settled) return;
    settled = true;
    // A small body comes in one chunk: decoded as it is, without a copy.
    done((chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8'));
  });
  req.on('error', (err) => {
    if (settled) return;
    settled = true;
    failed(err);
  });
}

/** Writes one JSON-RPC reply: headers as a flat list in one writeHead (no per-header setHeader bookkeeping), the body in the same write. */
type Send = (req: IncomingMessage, res: ServerResponse, status: number, text: Reply | undefined, headers?: Record<string, string>) => void;

function replySender(o: RpcAppOptions, cors: (origin: string | undefined) => string[]): Send {
  const http = slotCounter(o.metrics, 'l2stack_rpc_http_requests_total', 'HTTP requests to the JSON-RPC route by status', ['status']);
  const ok = http.child('200');
  return (req, res, status, text, headers) => {
    if (status === 200) ok.inc();
    else http.inc([String(status)]);
    // A large body is encoded once: measuring a string and then writing it walks (and flattens) it twice,
    // ~0.5 ms more for 600 KB. A node's large answer comes as bytes already (envelope.ts).
    const body = typeof text === 'string' && text.length > LARGE_ANSWER_CHARS ? Buffer.from(text, 'utf8') : text;
    const flat = cors(rawHeader(req, 'origin')).slice();
    if (body !== undefined) {
      const length = typeof body === 'string' ? Buffer.byteLength(body) : Array.isArray(body) ? body.reduce((n, c) => n + c.length, 0) : body.length;
      flat.push('content-type', JSON_TYPE, 'content-length', String(length));
    }
    if (headers) for (const k in headers) flat.push(k, headers[k]!);
    res.writeHead(status, flat);
    if (!Array.isArray(body)) return void res.end(body);
    // Chunks in one corked write (one writev; end() uncorks), the large one never copied.
    res.cork();
    for (const chunk of body) res.write(chunk);
    res.end();
  };
}

type PostHandler = (req: IncomingMessage, res: ServerResponse, failed: (err: unknown) => void) => void;

/**
 * POST / and /v1/<key>: the body, who sends it (its key, if any), the envelope, the reply's charge, the reply.
 * An anonymous call answered without waiting (the head, a cache hit) is written in the body's own `end`
 * event; `failed` gets anything thrown or rejected on the way.
 */
function postHandler(o: RpcAppOptions, send: Send): PostHandler {
  const maxResponseBytes = o.maxResponseBytes ?? 10_485_760;
  const costs = { bytesPerUnit: o.rateLimitBytesPerUnit ?? 0, msPerUnit: o.rateLimitMsPerUnit };

  const reply = (req: IncomingMessage, res: ServerResponse, text: string, client: string, limiter: RateLimiter, target: CallTarget): Awaitable<void> => {
    const budget = new ResponseBudget(maxResponseBytes);
    return andThen(handleBody(text, target, { maxBatch: o.maxBatch, maxJsonDepth: o.maxJsonDepth, client, budget, limiter }), (answer) => {
      // Charged before the reply leaves, so this client's next request already sees the cost of this one.
      const extra = replyCost(budget, costs);
      if (extra === 0) return send(req, res, answer.status, answer.body, answer.headers);
      return limiter
        .charge(client, extra)
        .catch((err: unknown) => o.logger.warn({ err }, 'rate-limit charge failed'))
        .then(() => send(req, res, answer.status, answer.body, answer.headers));
    });
  };

  /** A request naming a key: the key's lookup (access.ts), then its client, limiter and allow-list. */
  const replyWithKey = async (req: IncomingMessage, res: ServerResponse, text: string, address: string, access: KeyAccess): Promise<void> => {
    const decision = await access.resolve(req, address);
    if (!decision.ok) {
      const retry = decision.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(decision.retryAfterSeconds) };
      send(req, res, decision.status, errorBody(decision.code, decision.message, decision.data), retry);
      return;
    }
    const { client, limiter, allowed, keyId } = decision.access;
    await reply(req, res, text, client, limiter, allowed ? allowListCalls(allowed, keyId!, o.dispatcher) : o.dispatcher);
  };

  const respond = (req: IncomingMessage, res: ServerResponse, text: string | undefined): Awaitable<void> => {
    if (text === undefined) {
      send(req, res, 413, errorBody(RpcCodes.InvalidRequest, `invalid request: the body is larger than ${o.maxBodyBytes} bytes (RPC_MAX_BODY_BYTES)`, { limit: o.maxBodyBytes }), { connection: 'close' });
      return;
    }
    const address = clientAddress(req, o.trustedProxyHops);
    // Anonymous requests (no key in the path or header: nearly all) need no lookup and no await.
    if (o.access && requestKey(req).kind !== 'none') return replyWithKey(req, res, text, address, o.access);
    return reply(req, res, text, address, o.limiter, o.dispatcher);
  };

  return (req, res, failed) =>
    readBody(
      req,
      o.maxBodyBytes,
      (text) => {
        try {
          const done = respond(req, res, text);
          if (done instanceof Promise) done.catch(failed);
        } catch (err) {
          failed(err);
        }
      },
      failed,
    );
}

/** Everything but POST /: CORS preflight, the operator routes (unless on their own port), JSON 404/405. */
function otherRoutes(o: RpcAppOptions, cors: (origin: string | undefined) => string[]): RequestListener {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // CORS belongs to the JSON-RPC route only: a page has no business reading /metrics or /health/*.
  app.use((req, res, next) => {
    if (!isRpcPath(req.url)) return next();
    const headers = cors(req.headers.origin);
    for (let i = 0; i < headers.length; i += 2) res.setHeader(headers[i]!, headers[i + 1]!);
    if (req.method === 'OPTIONS') {
      if (headers.includes('access-control-allow-origin')) {
        res.setHeader('access-control-allow-methods', 'POST, GET, OPTIONS');
        res.setHeader('access-control-allow-headers', 'content-type, x-api-key');
        res.setHeader('access-control-max-age', '86400');
      }
      res.status(204).end();
      return;
    }
    next();
  });
  if (o.operatorRoutes !== false) mountOperatorRoutes(app, { metrics: o.metrics, readiness: publicReadiness(o.readiness) });
  app.use((req, res) => {
    res.status(req.path === '/' ? 405 : 404).json({ error: req.path === '/' ? 'JSON-RPC is served by POST /' : `no route for ${req.method} ${req.path}` });
  });
  app.use((err: Error, _req: Request, res: Response, _next: NextFunction) => {
    o.logger.error({ err }, 'request failed');
    if (!res.headersSent) res.status(500).setHeader('content-type', JSON_TYPE).end(errorBody(RpcCodes.Internal, 'internal error'));
  });
  return app as unknown as RequestListener;
}

/**
 * The HTTP side of the endpoint: POST / (and /v1/<key>) carries JSON-RPC (any content type is read as JSON:
 * some clients send text/plain); /health/* and /metrics for operators, here or on RPC_OPERATOR_PORT. Every
 * answer is JSON (or Prometheus text), never an HTML error page; CORS follows RPC_CORS_ORIGINS. POST / is the
 * hot path: served without express's router (measurably cheaper per call).
 */
export function createRpcApp(o: RpcAppOptions): RequestListener {
  const cors = corsPolicy(o.corsOrigins ?? '*');
  const others = otherRoutes(o, cors);
  const handlePost = postHandler(o, replySender(o, cors));
  return (req, res) => {
    if (req.method === 'POST' && isRpcPath(req.url)) {
      handlePost(req, res, (err: unknown) => {
        o.logger.error({ err }, 'request failed');
        if (!res.headersSent) {
          res.statusCode = 500;
          res.setHeader('content-type', JSON_TYPE);
          res.end(errorBody(RpcCodes.Internal, 'internal error'));
        }
      });
      return;
    }
    void others(req, res);
  };
}
