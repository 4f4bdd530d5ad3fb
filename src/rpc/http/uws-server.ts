import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from '@trufflesuite/uws-js-unofficial';
import { PortInUseError, reportDescriptors } from '../../common/http/server.js';
import type { RequestHead } from '../../common/http/request-head.js';
import { formatPeerAddress } from '../../common/http/peer-address.js';
import { headClientAddress } from '../../common/http/client-address.js';
import { ClientQuota } from '../../common/http/client-quota.js';
import { statusLine } from '../../common/http/status-line.js';
import { toReadiness } from '../../common/http/operator.js';
import type { HttpLimits } from '../../common/config/http-env.js';
import { errorBody, type Reply } from '../envelope.js';
import { RpcCodes } from '../errors.js';
import { isRpcPath } from '../keys/access.js';
import { corsPolicy, noRoute, PREFLIGHT_HEADERS, publicReadiness, type RpcAppOptions } from '../server.js';
import { postCore, type ReplySink } from './post.js';
import { loadUws } from './uws-load.js';

const JSON_TYPE = 'application/json';
const JSON_UTF8 = 'application/json; charset=utf-8';

/** What a response writer needs to know of one request: whether it was answered or the client left (no write may follow). */
interface Exchange {
  readonly res: HttpResponse;
  aborted: boolean;
}

/** uWS's header value, '' when absent, as the RequestHead's undefined. */
const header = (req: HttpRequest, name: string): string | undefined => {
  const value = req.getHeader(name);
  return value === '' ? undefined : value;
};

/** The peer's address as Node writes it (peer-address.ts): from uWS's binary form, cheaper than its text. */
const peerAddress = (res: HttpResponse): string => formatPeerAddress(new Uint8Array(res.getRemoteAddress()));

type Cors = (origin: string | undefined) => string[];
type Handler = (res: HttpResponse, req: HttpRequest) => void;

/** Bodies above this go out as the socket takes them (streamEnd), never copied. */
const STREAM_BYTES = 65_536;

/** One corked write of status, headers and body; nothing once the client has gone. */
function write(x: Exchange, status: number, headers: readonly string[], body: Reply | undefined, close = false): void {
  if (x.aborted) return;
  x.aborted = true; // answered: a later write (a timeout racing the answer) must not touch the freed response
  // A node's large answer comes as chunks (envelope.ts: the cached bytes with this call's id spliced around them).
  const chunks = Array.isArray(body) ? body : typeof body === 'string' && body.length > STREAM_BYTES ? [Buffer.from(body)] : undefined;
  const total = chunks?.reduce((n, c) => n + c.length, 0) ?? 0;
  x.res.cork(() => {
    x.res.writeStatus(statusLine(status));
    for (let i = 0; i < headers.length; i += 2) x.res.writeHeader(headers[i]!, headers[i + 1]!);
    // Without arguments: endWithoutBody(undefined, …) leaves the response open, which uWS treats as a fatal error.
    if (body === undefined && status === 204) return void x.res.endWithoutBody();
    if (chunks === undefined) return void x.res.end(body as string | undefined, close);
    if (total > STREAM_BYTES && !close) return streamEnd(x.res, chunks, total);
    x.res.end(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), close);
  });
}

/**
 * A large body handed over chunk by chunk as the client's socket takes it: tryEnd writes what fits (with the
 * whole content-length), onWritable goes on from where the socket stopped. Nothing is copied: end() would
 * copy what did not fit into uWS's own buffer, and joining the chunks would copy the cached answer for every
 * reply (600 KB of garbage per call: the collector then took ~0.5 ms per 1,000-log answer).
 */
function streamEnd(res: HttpResponse, chunks: readonly Buffer[], total: number): void {
  let next = 0;
  // The response's write offset where chunks[next] begins.
  let chunkStart = res.getWriteOffset();
  const pump = (): boolean => {
    while (next < chunks.length) {
      const chunk = chunks[next]!;
      const written = res.getWriteOffset() - chunkStart;
      const [ok, done] = res.tryEnd(written === 0 ? chunk : chunk.subarray(written), total);
      if (done) return true;
      if (!ok) return false;
      chunkStart += chunk.length;
      next++;
    }
    return true;
  };
  if (!pump()) res.onWritable(pump);
}

/** How much of a body over the limit is read (and dropped) before the 413, so the client is done sending and reads it. */
const DRAIN_FACTOR = 8;

/**
 * The body, up to `limit` bytes (undefined when larger: 413), handed to `done` in uWS's last data callback. A
 * larger body is read to its end and dropped when it is at most DRAIN_FACTOR times the limit (a client still
 * sending would see its connection reset instead of the 413); beyond that it is refused at once. A body that
 * does not arrive whole within `timeoutMs` is answered 408 and its connection closed.
 */
function readBody(x: Exchange, declaredLength: string | undefined, limit: number, timeoutMs: number, done: (text: string | undefined) => void, timedOut: () => void): void {
  const declared = declaredLength === undefined ? NaN : Number(declaredLength);
  if (Number.isFinite(declared) && declared > limit * DRAIN_FACTOR) return done(undefined);
  let chunks: Buffer[] | undefined;
  let size = 0;
  let tooLarge = Number.isFinite(declared) && declared > limit;
  let timer: NodeJS.Timeout | undefined;
  x.res.onData((chunk, last) => {
    if (x.aborted) return;
    if (chunks === undefined && last && !tooLarge && chunk.byteLength <= limit) {
      // The whole body in one callback (nearly every call): decoded from uWS's memory, no copy kept.
      return done(Buffer.from(chunk).toString('utf8'));
    }
    chunks ??= [];
    size += chunk.byteLength;
    if (size > limit && !tooLarge) {
      tooLarge = true;
      chunks.length = 0;
    }
    if (tooLarge) {
      if (!last && size <= limit * DRAIN_FACTOR) return void (timer ??= setTimeout(timedOut, timeoutMs));
      clearTimeout(timer);
      return done(undefined);
    }
    // uWS reuses the chunk's memory once this callback returns: keep a copy.
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (!last) return void (timer ??= setTimeout(timedOut, timeoutMs));
    clearTimeout(timer);
    done(Buffer.concat(chunks).toString('utf8'));
  });
}

export interface UwsListening {
  app: TemplatedApp;
  url: string;
  port: number;
  /** Stops accepting connections; uWS ends idle keep-alive connections within its 10 s idle timeout. */
  close(): Promise<void>;
}

/**
 * One POST: its head, read while uWS's request object lives (it is freed when the handler returns, before the
 * body arrives) — the path and query, the peer, and the only headers the endpoint reads — and its reply.
 * One object per request, its methods shared: nothing else is allocated to answer it (uwsReplySink).
 */
class PostExchange implements Exchange, RequestHead {
  aborted = false;
  readonly url: string;
  readonly remoteAddress: string;
  private readonly origin: string | undefined;
  private readonly apiKey: string | undefined;
  private readonly forwarded: string | undefined;

  constructor(
    readonly res: HttpResponse,
    req: HttpRequest,
    hops: number,
    readonly cors: Cors,
  ) {
    const query = req.getQuery();
    this.url = query ? `${req.getUrl()}?${query}` : req.getUrl();
    this.origin = header(req, 'origin');
    this.apiKey = header(req, 'x-api-key');
    this.forwarded = hops > 0 ? header(req, 'x-forwarded-for') : undefined;
    this.remoteAddress = peerAddress(res);
  }

  header(name: string): string | undefined {
    return name === 'origin' ? this.origin : name === 'x-api-key' ? this.apiKey : name === 'x-forwarded-for' ? this.forwarded : undefined;
  }
}

/** The ReplySink of http/post.ts on uWS. */
const uwsReplySink: ReplySink<PostExchange> = (x, status, body, extra) => {
  const headers = x.cors(x.header('origin')).slice();
  if (body !== undefined) headers.push('content-type', JSON_TYPE);
  let close = false;
  // uWS writes its own connection header: a close is asked of end() instead.
  for (const k in extra) {
    if (k === 'connection') close = extra[k] === 'close';
    else headers.push(k, extra[k]!);
  }
  write(x, status, headers, body, close);
};

/**
 * uWS has no connection cap, so the bodies one address is sending are bounded by RPC_MAX_INFLIGHT_PER_CLIENT too
 * (counted apart from its calls, which the envelope counts): a trickled 1 MiB body costs its memory until it is
 * whole, and one address cannot keep more than the quota of them. `take` answers the release (once, whatever
 * ends the body), or undefined when the quota is full.
 */
function bodySlots(o: RpcAppOptions): { take(x: PostExchange): (() => void) | undefined; refusal: string } {
  const perClient = o.inflight?.perClient ?? 0;
  const quota = new ClientQuota(perClient);
  const none = () => undefined;
  return {
    take(x) {
      if (perClient === 0) return none;
      const client = headClientAddress(x, o.trustedProxyHops);
      if (!quota.take(client)) return undefined;
      let held = true;
      return () => {
        if (held) quota.release(client);
        held = false;
      };
    },
    refusal: errorBody(RpcCodes.LimitExceeded, `too many request bodies in flight: at most ${perClient} of one client being received at once (RPC_MAX_INFLIGHT_PER_CLIENT); send them whole, then retry`, { cap: 'RPC_MAX_INFLIGHT_PER_CLIENT', limit: perClient, retryAfterSeconds: 1 }),
  };
}

/** POST / and /v1/<key>: the head captured, the body read, then the transport-neutral core (http/post.ts). */
function postHandler(o: RpcAppOptions, cors: Cors, limits: HttpLimits): Handler {
  const core = postCore(o, uwsReplySink);
  const failed = (x: Exchange, err: unknown) => {
    o.logger.error({ err }, 'request failed');
    write(x, 500, ['content-type', JSON_TYPE], errorBody(RpcCodes.Internal, 'internal error'));
  };
  const timeoutBody = JSON.stringify({ error: `the request body did not arrive within ${limits.requestTimeoutMs} ms (HTTP_REQUEST_TIMEOUT_MS)` });
  const slots = bodySlots(o);
  return (res, req) => {
    const x = new PostExchange(res, req, o.trustedProxyHops, cors);
    const release = slots.take(x);
    if (!release) return write(x, 429, ['content-type', JSON_TYPE, 'retry-after', '1'], slots.refusal, true);
    res.onAborted(() => {
      x.aborted = true;
      release();
    });
    readBody(x, header(req, 'content-length'), o.maxBodyBytes, limits.requestTimeoutMs, (text) => {
      release();
      try {
        const done = core(x, text);
        if (done instanceof Promise) done.catch((err: unknown) => failed(x, err));
      } catch (err) {
        failed(x, err);
      }
    }, () => {
      release();
      write(x, 408, ['content-type', JSON_TYPE], timeoutBody, true);
    });
  };
}

/** /health/live, /health/ready (the public view) and /metrics, as operator.ts serves them on express. */
function operatorAnswers(o: RpcAppOptions): (path: string) => Promise<{ status: number; type: string; body: string }> {
  const readiness = publicReadiness(o.readiness);
  return async (path) => {
    if (path === '/health/live') return { status: 200, type: JSON_UTF8, body: JSON.stringify({ status: 'ok' }) };
    if (path === '/metrics') return { status: 200, type: o.metrics.contentType, body: await o.metrics.metrics() };
    const body = toReadiness(await readiness());
    return { status: body.status === 'ok' ? 200 : 503, type: JSON_UTF8, body: JSON.stringify(body) };
  };
}

const OPERATOR_PATHS = new Set(['/health/live', '/health/ready', '/metrics']);

/** Every request: POST on the JSON-RPC path to `post`; CORS preflight, the operator routes, JSON 404/405. */
function routeHandler(o: RpcAppOptions, cors: Cors, post: Handler): Handler {
  const operatorAnswer = operatorAnswers(o);
  return (res, req) => {
    const x: Exchange = { res, aborted: false };
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const path = req.getUrl();
    const rpcPath = isRpcPath(path);
    if (method === 'POST' && rpcPath) return post(res, req);
    const corsHeaders = rpcPath ? cors(header(req, 'origin')) : [];
    if (method === 'OPTIONS' && rpcPath) {
      const allowed = corsHeaders.includes('access-control-allow-origin');
      return write(x, 204, allowed ? [...corsHeaders, ...PREFLIGHT_HEADERS.flat()] : corsHeaders, undefined);
    }
    if (method === 'GET' && o.operatorRoutes !== false && OPERATOR_PATHS.has(path)) {
      res.onAborted(() => (x.aborted = true));
      return void operatorAnswer(path).then(
        (a) => write(x, a.status, ['content-type', a.type], a.body),
        (err: unknown) => {
          o.logger.error({ err }, 'request failed');
          write(x, 500, ['content-type', JSON_TYPE], errorBody(RpcCodes.Internal, 'internal error'));
        },
      );
    }
    const answer = noRoute(method, path);
    write(x, answer.status, [...corsHeaders, 'content-type', JSON_UTF8], JSON.stringify(answer.body));
  };
}

/**
 * The endpoint's HTTP side on uWebSockets.js (RPC_TRANSPORT=uws): the same routes and answers as server.ts
 * on node:http — POST / and /v1/<key> through the same core (http/post.ts), CORS and its preflight, the
 * operator routes (unless on RPC_OPERATOR_PORT), JSON 404/405 — on uWS's C++ HTTP parser and socket layer,
 * which cost about half of node:http's CPU per small call (docs/rpc-speed.md, "Transport"). `addRoutes` registers
 * routes that must come before the catch-all (the WebSocket upgrade, ws/uws-sockets.ts).
 */
export async function listenUws(o: RpcAppOptions, host: string, port: number, limits: HttpLimits, addRoutes: (app: TemplatedApp) => void = () => undefined): Promise<UwsListening> {
  const uws = loadUws();
  // uWS has no accept hook: the reserve bounds its WebSocket sockets only (ws/uws-sockets.ts), not its HTTP connections.
  reportDescriptors('rpc (uws)', limits, o.logger);
  const app = uws.App();
  const cors = corsPolicy(o.corsOrigins ?? '*');
  addRoutes(app);
  const post = postHandler(o, cors, limits);
  const other = routeHandler(o, cors, post);
  // POST straight to the JSON-RPC route when the path is one (nearly every request); the rest to the router.
  app.post('/*', (res, req) => (isRpcPath(req.getUrl()) ? post(res, req) : other(res, req)));
  app.any('/*', other);

  const token = await new Promise<us_listen_socket | false>((resolve) => app.listen(host, port, resolve));
  if (!token) throw new PortInUseError(`rpc: cannot listen on ${host}:${port} (RPC_TRANSPORT=uws): the port is in use or the address is not this machine's`);
  const actual = uws.us_socket_local_port(token as never);
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    app,
    port: actual,
    url: `http://${shownHost}:${actual}`,
    close: async () => uws.us_listen_socket_close(token),
  };
}
