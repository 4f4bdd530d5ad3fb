import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uwebsockets';
import { PortInUseError } from '../../../common/http/server.js';
import type { HttpLimits } from '../../../common/config/http-env.js';
import { isRpcPath } from '../../keys/access.js';
import type { ReplySink, TransportCore } from '../core.js';
import { corsPolicy, otherRoutes, requestFailed, type Cors, type RouteAnswer, type RpcAppOptions } from '../routes.js';
import { bodySlots, readBody } from './body.js';
import { header, JSON_HEADERS, NO_HEADERS, UwsHead, write, type Exchange } from './reply.js';
import { holdConnectionCaps, type UwsConnections } from './connections.js';
import { loadUws } from './load.js';

/** One POST: its head and its reply; one object per request, nothing else is allocated to answer it (uwsReplySink). */
class PostExchange extends UwsHead implements Exchange {
  aborted = false;

  constructor(
    readonly res: HttpResponse,
    req: HttpRequest,
    hops: number,
    readonly cors: Cors,
    path: string,
  ) {
    super(res, req, hops > 0, path);
  }
}

/** The ReplySink of the transport core on uWS: the CORS list as it is, then the content type and any extra headers. */
const uwsReplySink: ReplySink<PostExchange> = (x, status, body, extra) => {
  let more = body === undefined ? NO_HEADERS : JSON_HEADERS;
  let close = false;
  // uWS writes its own connection header: a close is asked of end() instead.
  for (const k in extra) {
    if (k === 'connection') close = extra[k] === 'close';
    else more = [...more, k, extra[k]!];
  }
  write(x, status, x.cors(x.header('origin')), body, close, more);
};

const RETRY_AFTER_1: readonly string[] = ['retry-after', '1'];

type Handler = (res: HttpResponse, req: HttpRequest) => void;
type PostHandler = (res: HttpResponse, req: HttpRequest, path: string) => void;

/** POST / and /v1/<key>: the head captured, the body read, then the transport core. */
function postHandler(o: RpcAppOptions, core: TransportCore, cors: Cors, limits: HttpLimits): PostHandler {
  const post = core.post(uwsReplySink);
  const failed = (x: Exchange, err: unknown) => {
    const answer = requestFailed(o.logger, err);
    write(x, answer.status, answer.headers, answer.body);
  };
  const timeoutBody = JSON.stringify({
    error: `the request body did not arrive within ${limits.requestTimeoutMs} ms (HTTP_REQUEST_TIMEOUT_MS)`,
  });
  // The bodies one address is sending are bounded by RPC_MAX_INFLIGHT_PER_CLIENT too (body.ts), beside its connections.
  const slots = bodySlots(o.inflight?.perClient ?? 0, o.trustedProxyHops);
  return (res, req, path) => {
    const x = new PostExchange(res, req, o.trustedProxyHops, cors, path);
    const release = slots.take(x);
    if (!release) return write(x, 429, JSON_HEADERS, slots.refusal, true, RETRY_AFTER_1);
    res.onAborted(() => {
      x.aborted = true;
      release();
    });
    readBody(
      x,
      header(req, 'content-length'),
      o.maxBodyBytes,
      limits.requestTimeoutMs,
      (text) => {
        release();
        try {
          const done = post(x, text);
          if (done instanceof Promise) done.catch((err: unknown) => failed(x, err));
        } catch (err) {
          failed(x, err);
        }
      },
      () => {
        release();
        write(x, 408, JSON_HEADERS, timeoutBody, true);
      },
    );
  };
}

/** Everything but POST on the JSON-RPC path: the route table (routes.ts). A HEAD answer goes without its body. */
function routeHandler(o: RpcAppOptions, cors: Cors): Handler {
  const routes = otherRoutes(o, cors);
  return (res, req) => {
    const x: Exchange = { res, aborted: false };
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const send = (a: RouteAnswer) => write(x, a.status, a.headers, method === 'HEAD' ? undefined : a.body);
    const answer = routes(method, req.getUrl(), header(req, 'origin'));
    if (!(answer instanceof Promise)) return send(answer);
    res.onAborted(() => (x.aborted = true));
    void answer.then(send);
  };
}

export interface UwsListening {
  url: string;
  port: number;
  /** Stops accepting connections; uWS ends idle keep-alive connections within its 10 s idle timeout. */
  close(): Promise<void>;
}

/**
 * The public port on uWebSockets.js (RPC_TRANSPORT=uws): the same core and route table as node/http.ts on
 * uWS's C++ HTTP parser and socket layer, which cost about half of node:http's CPU per small call (docs/rpc.md,
 * "Transport"). The TCP connection caps are held as node:http's listener holds them (uws/connections.ts). `addRoutes`
 * registers routes that must come before the catch-all (the WebSocket upgrade, uws/ws.ts).
 */
export async function listenUws(
  o: RpcAppOptions,
  core: TransportCore,
  host: string,
  port: number,
  limits: HttpLimits,
  addRoutes: (app: TemplatedApp, connections: UwsConnections) => void = () => undefined,
): Promise<UwsListening> {
  const uws = loadUws();
  const app = uws.App();
  let actual = 0;
  const connections = holdConnectionCaps(app, 'rpc (uws)', limits, o.logger, () => actual);
  const cors = corsPolicy(o.corsOrigins);
  addRoutes(app, connections);
  const post = postHandler(o, core, cors, limits);
  const other = routeHandler(o, cors);
  // POST straight to the JSON-RPC route when the path is one (nearly every request); the rest to the table.
  app.post('/*', (res, req) => {
    const path = req.getUrl();
    return isRpcPath(path) ? post(res, req, path) : other(res, req);
  });
  app.any('/*', other);

  const token = await new Promise<us_listen_socket | false>((resolve) => app.listen(host, port, resolve));
  if (!token)
    throw new PortInUseError(
      `rpc: cannot listen on ${host}:${port} (RPC_TRANSPORT=uws): the port is in use or the address is not this machine's`,
    );
  actual = uws.us_socket_local_port(token);
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return { port: actual, url: `http://${shownHost}:${actual}`, close: async () => uws.us_listen_socket_close(token) };
}
