import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { FetchRequest } from 'ethers';

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

/** An ethers FetchRequest whose calls go through the pool (clones, which ethers makes per call, keep it). */
export function pooledFetchRequest(url: string): FetchRequest {
  const request = new FetchRequest(url);
  request.getUrlFunc = FetchRequest.createGetUrlFunc({ agent: agentFor(url) });
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
