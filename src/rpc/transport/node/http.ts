import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { rawHeader } from '../../../common/http/raw-header.js';
import { NodeRequestHead } from '../../../common/http/request-head.js';
import { LARGE_ANSWER_CHARS } from '../../upstream/raw-json.js';
import { isRpcPath } from '../../keys/access.js';
import type { ReplySink, TransportCore } from '../core.js';
import { corsPolicy, otherRoutes, requestFailed, type Cors, type RouteAnswer, type RpcAppOptions } from '../routes.js';

const JSON_TYPE = 'application/json';

/**
 * Reads the body up to `limit` bytes and hands it to `done` (undefined when it is larger: the caller answers
 * 413) in the stream's own event, not through a promise (types.ts, Awaitable); `failed` on a stream error.
 */
function readBody(
  req: IncomingMessage,
  limit: number,
  done: (text: string | undefined) => void,
  failed: (err: unknown) => void,
): void {
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
function nodeReplySink(cors: Cors): ReplySink<NodeExchange> {
  return ({ req, res }, status, text, headers) => {
    // A large body is encoded once: measuring a string and then writing it walks (and flattens) it twice,
    // ~0.5 ms more for 600 KB. A node's large answer comes as bytes already (envelope.ts).
    const body = typeof text === 'string' && text.length > LARGE_ANSWER_CHARS ? Buffer.from(text, 'utf8') : text;
    const flat = cors(rawHeader(req, 'origin')).slice();
    if (body !== undefined) {
      const length =
        typeof body === 'string'
          ? Buffer.byteLength(body)
          : Array.isArray(body)
            ? body.reduce((n, c) => n + c.length, 0)
            : body.length;
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

/** An answer of the route table (routes.ts); node:http leaves the body out of a HEAD answer itself. */
function writeRoute(res: ServerResponse, a: RouteAnswer): void {
  res.writeHead(
    a.status,
    a.body === undefined ? a.headers.slice() : [...a.headers, 'content-length', String(Buffer.byteLength(a.body))],
  );
  res.end(a.body);
}

/**
 * The public port on node:http (RPC_TRANSPORT=node): POST / and /v1/<key> through the transport core (any
 * content type is read as JSON: some clients send text/plain), everything else through the route table
 * (routes.ts). The connection limits are the listener's (common/http/server.ts); the WebSocket upgrade is
 * node/ws.ts's. `core` is shared with the WebSocket side.
 */
export function createRpcApp(o: RpcAppOptions, core: TransportCore): RequestListener {
  const cors = corsPolicy(o.corsOrigins);
  const routes = otherRoutes(o, cors);
  const post = core.post(nodeReplySink(cors));
  const failed = (res: ServerResponse) => (err: unknown) => {
    const answer = requestFailed(o.logger, err);
    if (!res.headersSent) writeRoute(res, answer);
  };
  return (req, res) => {
    const url = req.url ?? '/';
    if (req.method === 'POST' && isRpcPath(url)) {
      return readBody(
        req,
        o.maxBodyBytes,
        (text) => {
          try {
            const done = post(new NodeExchange(req, res), text);
            if (done instanceof Promise) done.catch(failed(res));
          } catch (err) {
            failed(res)(err);
          }
        },
        failed(res),
      );
    }
    const query = url.indexOf('?');
    const answer = routes(req.method ?? 'GET', query < 0 ? url : url.slice(0, query), rawHeader(req, 'origin'));
    if (answer instanceof Promise) void answer.then((a) => writeRoute(res, a));
    else writeRoute(res, answer);
  };
}
