import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Registry } from 'prom-client';
import type { Logger } from '../common/log.js';
import { mountOperatorRoutes, type Check } from '../common/http/operator.js';
import { counter } from '../common/metrics.js';
import type { Dispatcher } from './dispatcher.js';
import { errorBody, handleBody, type Reply } from './envelope.js';
import { LARGE_ANSWER_CHARS } from './upstream/raw-json.js';
import { RpcCodes } from './errors.js';
import { allowListCalls, isRpcPath, type KeyAccess } from './keys/access.js';
import { answerCost, type RateLimiter } from './ratelimit.js';
import { ResponseBudget } from './response-budget.js';

export interface RpcAppOptions {
  dispatcher: Dispatcher;
  limiter: RateLimiter;
  maxBatch: number;
  maxBodyBytes: number;
  /** RPC_MAX_RESPONSE_BYTES: byte budget of one reply (response-budget.ts). */
  maxResponseBytes?: number;
  /** RPC_RATE_LIMIT_BYTES_PER_UNIT: answers are charged to the client's bucket after the reply (ratelimit.ts). */
  rateLimitBytesPerUnit?: number;
  trustedProxyHops: number;
  /** RPC_MAX_JSON_DEPTH (envelope.ts); undefined: the envelope's default. */
  maxJsonDepth?: number;
  metrics: Registry;
  logger: Logger;
  /** The checks of /health/ready (src/common/http/operator.ts), in a fixed order. */
  readiness(): Promise<Check[]>;
  /** API keys (POST /v1/<key> or x-api-key): their own limits and allow-lists; without it every request is anonymous. */
  access?: KeyAccess;
}

const JSON_TYPE = 'application/json';


/** Bodies longer than this are encoded to bytes once before they are sent (see send). */
/** Reads the body up to `limit` bytes; undefined when it is larger (the caller answers 413). */
function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        resolve(undefined);
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      // A small body comes in one chunk: decoded as it is, without a copy.
      if (!over) resolve((chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8'));
    });
    req.on('error', reject);
  });
}

/**
 * The HTTP side of the endpoint: POST / carries JSON-RPC (any content type is read as JSON: some
 * clients send text/plain); /health/live, /health/ready and /metrics for operators. Every answer is
 * JSON (or Prometheus text), never an HTML error page. CORS is open: dapps call this from browsers.
 */
/** The client a rate limit applies to: the socket address, or the address `hops` trusted proxies back. */
export function clientAddress(req: IncomingMessage, hops: number): string {
  const socket = req.socket.remoteAddress ?? 'unknown';
  if (hops === 0) return socket;
  const header = req.headers['x-forwarded-for'];
  const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').map((s) => s.trim()).filter(Boolean);
  const chain = [...forwarded, socket];
  return chain[Math.max(0, chain.length - 1 - hops)]!;
}

export function createRpcApp(o: RpcAppOptions): RequestListener {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const http = counter(o.metrics, 'l2stack_rpc_http_requests_total', 'HTTP requests to the JSON-RPC route by status', ['status']);

  app.use((req, res, next) => {
    res.setHeader('access-control-allow-origin', '*');
    if (req.method === 'OPTIONS') {
      res.setHeader('access-control-allow-methods', 'POST, GET, OPTIONS');
      res.setHeader('access-control-allow-headers', 'content-type, x-api-key');
      res.setHeader('access-control-max-age', '86400');
      res.status(204).end();
      return;
    }
    next();
  });

  mountOperatorRoutes(app, { metrics: o.metrics, readiness: o.readiness });

  app.use((req, res) => {
    res.status(req.path === '/' ? 405 : 404).json({ error: req.path === '/' ? 'JSON-RPC is served by POST /' : `no route for ${req.method} ${req.path}` });
  });
  app.use((err: Error, _req: Request, res: Response, _next: NextFunction) => {
    o.logger.error({ err }, 'request failed');
    if (!res.headersSent) res.status(500).setHeader('content-type', JSON_TYPE).end(errorBody(RpcCodes.Internal, 'internal error'));
  });
  // POST / is the hot path: served without express's router (measurably cheaper per call), one writeHead
  // with the headers as a flat list (no per-header setHeader bookkeeping) and the body in the same write.
  const ok = http.labels({ status: '200' });
  const send = (res: ServerResponse, status: number, text: Reply | undefined, headers?: Record<string, string>) => {
    (status === 200 ? ok : http.labels({ status: String(status) })).inc();
    // A large body is encoded once: measuring a string and then writing it walks (and flattens) it twice,
    // ~0.5 ms more for 600 KB. A node's large answer comes as bytes already (envelope.ts).
    const body = typeof text === 'string' && text.length > LARGE_ANSWER_CHARS ? Buffer.from(text, 'utf8') : text;
    const length = body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : Array.isArray(body) ? body.reduce((n, c) => n + c.length, 0) : body.length;
    const flat: string[] = body === undefined ? ['access-control-allow-origin', '*'] : ['access-control-allow-origin', '*', 'content-type', JSON_TYPE, 'content-length', String(length)];
    if (headers) for (const k in headers) flat.push(k, headers[k]!);
    res.writeHead(status, flat);
    if (!Array.isArray(body)) return void res.end(body);
    // Chunks in one corked write (one writev; end() uncorks), the large one never copied.
    res.cork();
    for (const chunk of body) res.write(chunk);
    res.end();
  };
  const handlePost = async (req: IncomingMessage, res: ServerResponse) => {
    const text = await readBody(req, o.maxBodyBytes);
    if (text === undefined) {
      send(res, 413, errorBody(RpcCodes.InvalidRequest, `invalid request: the body is larger than ${o.maxBodyBytes} bytes (RPC_MAX_BODY_BYTES)`, { limit: o.maxBodyBytes }), { connection: 'close' });
      return;
    }
    const address = clientAddress(req, o.trustedProxyHops);
    let client = address;
    let limiter = o.limiter;
    let dispatcher: Pick<Dispatcher, 'call'> = o.dispatcher;
    if (o.access) {
      const decision = await o.access.resolve(req, address);
      if (!decision.ok) {
        send(res, decision.status, errorBody(decision.code, decision.message));
        return;
      }
      ({ client, limiter } = decision.access);
      const { allowed, keyId } = decision.access;
      if (allowed) dispatcher = allowListCalls(allowed, keyId!, (method, params, scope) => o.dispatcher.call(method, params, scope));
    }
    const budget = new ResponseBudget(o.maxResponseBytes ?? 10_485_760);
    // handleBody only calls `call`: a key's allow-list wraps the dispatcher's.
    const answer = await handleBody(text, dispatcher as Dispatcher, {
      maxBatch: o.maxBatch,
      maxJsonDepth: o.maxJsonDepth,
      client,
      budget,
      charge: (cost) => limiter.take(client, cost),
    });
    // Charged before the reply leaves, so this client's next request already sees the cost of this one.
    const extra = answerCost(budget.used, o.rateLimitBytesPerUnit ?? 0);
    if (extra > 0) await limiter.charge(client, extra).catch((err: unknown) => o.logger.warn({ err }, 'rate-limit charge failed'));
    send(res, answer.status, answer.body, answer.headers);
  };
  return (req, res) => {
    if (req.method === 'POST' && isRpcPath(req.url)) {
      handlePost(req, res).catch((err: unknown) => {
        o.logger.error({ err }, 'request failed');
        if (!res.headersSent) {
          res.statusCode = 500;
          res.setHeader('content-type', JSON_TYPE);
          res.end(errorBody(RpcCodes.Internal, 'internal error'));
        }
      });
      return;
    }
    void app(req, res);
  };
}
