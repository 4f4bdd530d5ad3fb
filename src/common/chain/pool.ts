import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { gunzipSync } from 'node:zlib';
import { FetchRequest, makeError, type FetchGetUrlFunc } from 'ethers';

/**
 * Outgoing JSON-RPC connections to nodes, pooled: at most MAX_SOCKETS_PER_NODE sockets per node
 * (host:port) for the whole process, kept alive between calls; further calls queue for a socket.
 *
 * Why: every call through ethers' default transport or global fetch may open a new socket when the
 * others are busy, so a burst (or a slow node, or many /health/ready probes) could open thousands of
 * sockets and exhaust the process's descriptors — the relayer logged `connect EMFILE` under a flood of
 * incoming sockets. A bounded pool keeps the outgoing side to a small, known number.
 */
export const MAX_SOCKETS_PER_NODE = 64;

// Idle sockets are closed after 5 s (as Node's global agent does), before nodes' own keep-alive timeouts,
// so a call rarely lands on a socket the node is closing. All of them may stay idle until then: the relayer
// works in bursts (16 estimates, 32 broadcasts per direction), and keeping only 8 closed and reopened the
// rest after every burst (close, connect and their writes were ~7 % of its thread in the bench profile).
const agentOptions = {
  keepAlive: true,
  maxSockets: MAX_SOCKETS_PER_NODE,
  maxFreeSockets: MAX_SOCKETS_PER_NODE,
  timeout: 5_000,
  scheduling: 'lifo' as const,
};
const agents = { http: new HttpAgent(agentOptions), https: new HttpsAgent(agentOptions) };

export function agentFor(url: string): HttpAgent {
  return new URL(url).protocol === 'https:' ? agents.https : agents.http;
}

/** A whole HTTP answer read over the pool. */
interface PooledAnswer {
  statusCode: number;
  statusMessage: string;
  headers: NodeJS.Dict<string | string[]>;
  body: Buffer;
}

/**
 * One HTTP request over the pool, bounded by `timeoutMs` from the call (queueing for a socket included: Node's
 * req.setTimeout starts only once a socket is assigned). A timeout, `cancel` or a stream error destroys the
 * request, which frees its socket; the promise rejects with `timedOut()` on the timeout.
 */
function pooledRequest(
  url: URL,
  options: { method: string; headers: Record<string, string | number>; body?: Uint8Array | string },
  timeoutMs: number,
  timedOut: () => Error,
  cancel?: (abort: (err: Error) => void) => void,
): Promise<PooledAnswer> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<PooledAnswer>((resolve, reject) => {
    const request = send(url, { method: options.method, headers: options.headers, agent: agentFor(url.href) });
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(timedOut()), timeoutMs);
    cancel?.(fail);
    request.on('error', fail);
    request.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', fail);
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({
          statusCode: res.statusCode ?? 0,
          statusMessage: res.statusMessage ?? '',
          headers: res.headers,
          body: Buffer.concat(chunks),
        });
      });
    });
    request.end(options.body);
  });
}

/**
 * ethers' transport over the pool, in place of its own Node one (FetchRequest.createGetUrlFunc), which bounds a
 * call only by the socket's idle timeout: that timer starts once a socket is assigned, so a call queued behind a
 * full pool waited without limit; and on a timeout or a cancel it rejected without destroying the request, so a
 * node that accepts and never answers kept each such socket taken from the pool (its abort signal went to an
 * option Node does not read), until after MAX_SOCKETS_PER_NODE of them every call to that node hung. Through
 * pooledRequest the request's `timeout` counts from the call, and a timeout or a cancel frees the socket.
 */
const pooledGetUrl: FetchGetUrlFunc = async (req, signal) => {
  if (signal?.cancelled) throw makeError('request cancelled before sending', 'CANCELLED');
  const url = new URL(req.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw makeError(`unsupported protocol ${url.protocol}`, 'UNSUPPORTED_OPERATION', { operation: 'request' });
  const answer = await pooledRequest(
    url,
    { method: req.method, headers: { ...req.headers }, body: req.body ?? undefined },
    req.timeout,
    () => makeError(`request timeout: no answer within ${req.timeout} ms`, 'TIMEOUT'),
    signal && ((abort) => signal.addListener(() => abort(makeError('request cancelled', 'CANCELLED')))),
  );
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(answer.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : (v ?? '');
  let body: Uint8Array | null = answer.body.length === 0 ? null : answer.body;
  try {
    if (body && headers['content-encoding'] === 'gzip') body = gunzipSync(body);
  } catch (err) {
    throw makeError('bad response data', 'SERVER_ERROR', { request: req, info: { error: err } });
  }
  return { statusCode: answer.statusCode, statusMessage: answer.statusMessage, headers, body };
};

/** An ethers FetchRequest whose calls go through the pool (clones, which ethers makes per call, keep it). */
export function pooledFetchRequest(url: string): FetchRequest {
  const request = new FetchRequest(url);
  request.getUrlFunc = pooledGetUrl;
  return request;
}

/**
 * One JSON-RPC call over the pool, bounded by `timeoutMs` from the start (queueing for a socket included): for calls
 * outside a provider (before one exists, health checks), so they cannot multiply sockets to the nodes either.
 */
export async function pooledRpc<T>(url: string, method: string, params: unknown[] = [], timeoutMs = 5_000): Promise<T> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  const answer = await pooledRequest(
    new URL(url),
    { method: 'POST', headers, body },
    timeoutMs,
    () => new Error(`no answer within ${timeoutMs} ms`),
  );
  if (answer.statusCode < 200 || answer.statusCode >= 300) throw new Error(`HTTP ${answer.statusCode}`);
  const parsed = JSON.parse(answer.body.toString()) as { result?: T; error?: { message: string } };
  if (parsed.error) throw new Error(parsed.error.message);
  return parsed.result as T;
}
