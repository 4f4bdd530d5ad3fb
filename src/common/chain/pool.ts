import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { gunzipSync } from 'node:zlib';
import { FetchRequest, makeError, type FetchGetUrlFunc, type GetUrlResponse } from 'ethers';

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
const agentOptions = { keepAlive: true, maxSockets: MAX_SOCKETS_PER_NODE, maxFreeSockets: MAX_SOCKETS_PER_NODE, timeout: 5_000, scheduling: 'lifo' as const };
const agents = { http: new HttpAgent(agentOptions), https: new HttpsAgent(agentOptions) };

export function agentFor(url: string): HttpAgent {
  return new URL(url).protocol === 'https:' ? agents.https : agents.http;
}

/** Sockets the pool holds now (open and in use, open and idle) summed over nodes: for tests and metrics. */
export function pooledSocketCount(): { active: number; idle: number } {
  const count = (m: NodeJS.ReadOnlyDict<unknown[]>) => Object.values(m).reduce((n, list) => n + (list?.length ?? 0), 0);
  return {
    active: count(agents.http.sockets) + count(agents.https.sockets),
    idle: count(agents.http.freeSockets) + count(agents.https.freeSockets),
  };
}

/**
 * ethers' transport over the pool, in place of its own Node one (FetchRequest.createGetUrlFunc), which bounds a
 * call only by the socket's idle timeout: that timer starts once a socket is assigned, so a call queued behind a
 * full pool waited without limit; and on a timeout or a cancel it rejected without destroying the request, so a
 * node that accepts and never answers kept each such socket taken from the pool (its abort signal went to an
 * option Node does not read), until after MAX_SOCKETS_PER_NODE of them every call to that node hung. Here the
 * request's `timeout` counts from the call, and a timeout, a cancel or a failed response destroys the request,
 * which frees its socket.
 */
const pooledGetUrl = (agent: HttpAgent): FetchGetUrlFunc => (req, signal) =>
  new Promise<GetUrlResponse>((resolve, reject) => {
    if (signal?.cancelled) return reject(makeError('request cancelled before sending', 'CANCELLED'));
    const url = new URL(req.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return reject(makeError(`unsupported protocol ${url.protocol}`, 'UNSUPPORTED_OPERATION', { operation: 'request' }));
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(url, { method: req.method, headers: { ...req.headers }, agent });
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(makeError(`request timeout: no answer within ${req.timeout} ms`, 'TIMEOUT')), req.timeout);
    signal?.addListener(() => fail(makeError('request cancelled', 'CANCELLED')));
    request.on('error', fail);
    request.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', fail);
      res.on('end', () => {
        if (settled) return;
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : (v ?? '');
        let body: Uint8Array | null = chunks.length === 0 ? null : Buffer.concat(chunks);
        try {
          if (body && headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        } catch (err) {
          return fail(makeError('bad response data', 'SERVER_ERROR', { request: req, info: { error: err } }));
        }
        settled = true;
        clearTimeout(timer);
        resolve({ statusCode: res.statusCode ?? 0, statusMessage: res.statusMessage ?? '', headers, body });
      });
    });
    request.end(req.body ? Buffer.from(req.body) : undefined);
  });

/** An ethers FetchRequest whose calls go through the pool (clones, which ethers makes per call, keep it). */
export function pooledFetchRequest(url: string): FetchRequest {
  const request = new FetchRequest(url);
  request.getUrlFunc = pooledGetUrl(agentFor(url));
  return request;
}

/** One JSON-RPC call over the pool, bounded by `timeoutMs` from the start (queueing for a socket included). */
export function pooledRpc<T>(url: string, method: string, params: unknown[], timeoutMs: number): Promise<T> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const u = new URL(url);
  const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<T>((resolve, reject) => {
    const req = send(
      u,
      { method: 'POST', agent: agentFor(url), headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          clearTimeout(timer);
          if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) >= 300) return reject(new Error(`HTTP ${res.statusCode}`));
          try {
            const parsed = JSON.parse(Buffer.concat(chunks).toString()) as { result?: T; error?: { message: string } };
            if (parsed.error) reject(new Error(parsed.error.message));
            else resolve(parsed.result as T);
          } catch (err) {
            reject(err as Error);
          }
        });
      },
    );
    // A timer rather than req.setTimeout: the latter starts only once a socket is assigned, so a call
    // queued behind a full pool would otherwise wait unbounded.
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}
