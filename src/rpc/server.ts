import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { rawHeader } from '../common/http/raw-header.js';
import { NodeRequestHead } from '../common/http/request-head.js';
import { mountOperatorRoutes, operatorListener, redactHosts, type Check } from '../common/http/operator.js';
import { errorBody } from './envelope.js';
import { LARGE_ANSWER_CHARS } from './upstream/raw-json.js';
import { RpcCodes } from './errors.js';
import { isRpcPath } from './keys/access.js';
import { postCore, type PostOptions, type ReplySink } from './http/post.js';

export interface RpcAppOptions extends PostOptions {
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

/** The extra headers of a CORS preflight answer (OPTIONS) when the origin is allowed. */
export const PREFLIGHT_HEADERS: readonly [string, string][] = [
  ['access-control-allow-methods', 'POST, GET, OPTIONS'],
  ['access-control-allow-headers', 'content-type, x-api-key'],
  ['access-control-max-age', '86400'],
];

/** What a GET (or any other method) on a path the endpoint does not serve gets: status and JSON body. */
export const noRoute = (method: string, path: string): { status: number; body: { error: string } } =>
  path === '/' ? { status: 405, body: { error: 'JSON-RPC is served by POST /' } } : { status: 404, body: { error: `no route for ${method} ${path}` } };

/** The public port's readiness: the service's public view, with any host or URL a check let slip cut out. */
export const publicReadiness = (readiness: (view: ReadinessView) => Promise<Check[]>) => async () =>
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

/** One POST on node:http: its head (read from the request when asked) and the response that answers it. */
class NodeExchange extends NodeRequestHead {
  constructor(
    req: IncomingMessage,
    readonly res: ServerResponse,
  ) {
    super(req);
  }
}

/**
 * Writes one JSON-RPC reply on a node:http response: headers as a flat list in one writeHead (no per-header
 * setHeader bookkeeping), the body in the same write.
 */
function nodeReplySink(cors: (origin: string | undefined) => string[]): ReplySink<NodeExchange> {
  return ({ req, res }, status, text, headers) => {
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

/** POST / on node:http: the body read in its stream's events, then the transport-neutral core (http/post.ts). */
function postHandler(o: RpcAppOptions, cors: (origin: string | undefined) => string[]): PostHandler {
  const core = postCore(o, nodeReplySink(cors));
  return (req, res, failed) =>
    readBody(
      req,
      o.maxBodyBytes,
      (text) => {
        try {
          const done = core(new NodeExchange(req, res), text);
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
      if (headers.includes('access-control-allow-origin')) for (const [name, value] of PREFLIGHT_HEADERS) res.setHeader(name, value);
      res.status(204).end();
      return;
    }
    next();
  });
  if (o.operatorRoutes !== false) mountOperatorRoutes(app, { metrics: o.metrics, readiness: publicReadiness(o.readiness) });
  app.use((req, res) => {
    const answer = noRoute(req.method, req.path);
    res.status(answer.status).json(answer.body);
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
  const handlePost = postHandler(o, cors);
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
