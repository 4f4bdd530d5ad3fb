/**
 * Worker thread of the relayer benchmark (test/bench/relayer.ts): a JSON-RPC proxy in front of
 * `workerData.upstream` that loses every `dropEvery`-th new transaction. The first eth_sendRawTransaction of
 * a nonce (the phase's one signer per chain; see nonceOf) is counted, and every dropEvery-th one is answered with
 * its hash but never forwarded, as if the node had dropped it. A replacement (a nonce seen before) always goes
 * through, so one fee bump recovers a lost claim. dropEvery 0 drops nothing. It runs in its own thread so
 * that proxying does not take the relayer's thread (on this 2-core machine it still shares the cores). Messages: posts
 * { port } once listening; answers 'stats' with { dropped }.
 */
import { Agent, createServer, request, type IncomingMessage } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { decodeRlp, getBytes, keccak256 } from 'ethers';

const { upstream, dropEvery } = workerData as { upstream: string; dropEvery: number };
type Call = { id: unknown; method: string; params?: unknown[] };
const seen = new Set<string>();
let fresh = 0;
let dropped = 0;

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The nonce of a signed transaction, read from its RLP. Why not the (sender, nonce) of ethers'
 * Transaction.from: parsing and recovering the sender cost 5.4 ms per transaction here, a third of a core at
 * the bench's rate, taken from the relayer this proxy stands in front of on a 2-core machine (the drop phase
 * measured 0.53x with it). The nonce alone is enough: each chain's proxy sees the claims of the one signer
 * key the drop phase gives the relayer for it (the bench's own transactions do not go through it).
 */
function nonceOf(raw: string): string {
  const bytes = getBytes(raw);
  // A typed transaction (EIP-2718) is its type byte and then the list [chainId, nonce, ...]; a legacy one the list
  // [nonce, ...].
  const fields = decodeRlp(bytes[0]! >= 0xc0 ? bytes : bytes.subarray(1)) as string[];
  return String(bytes[0]! >= 0xc0 ? fields[0] : fields[1]);
}

/** The answer to a call this proxy swallows, or undefined to forward it. */
function swallow(c: Call): unknown {
  if (c.method !== 'eth_sendRawTransaction' || dropEvery === 0) return undefined;
  const raw = String(c.params?.[0]);
  const key = nonceOf(raw);
  if (seen.has(key)) return undefined;
  seen.add(key);
  if (++fresh % dropEvery !== 0) return undefined;
  dropped++;
  return { jsonrpc: '2.0', id: c.id, result: keccak256(raw) };
}

// Upstream connections are kept alive, and a request that sends no transaction is passed through as bytes:
// the proxy should cost the relayer as little as the network it stands for.
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const target = new URL(upstream);

function forward(body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        readBody(res).then(resolve, reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const server = createServer((req, res) => {
  void (async () => {
    const text = await readBody(req);
    let reply: string;
    if (!text.includes('eth_sendRawTransaction')) reply = await forward(text);
    else {
      const body = JSON.parse(text) as Call | Call[];
      const calls = Array.isArray(body) ? body : [body];
      const answers = new Map<Call, unknown>();
      for (const c of calls) {
        const answer = swallow(c);
        if (answer !== undefined) answers.set(c, answer);
      }
      const rest = calls.filter((c) => !answers.has(c));
      if (rest.length > 0) {
        const got = JSON.parse(await forward(JSON.stringify(Array.isArray(body) ? rest : rest[0]))) as
          { id: unknown } | { id: unknown }[];
        for (const a of Array.isArray(got) ? got : [got]) answers.set(rest.find((c) => c.id === a.id) ?? rest[0]!, a);
      }
      const out = calls.map((c) => answers.get(c));
      reply = JSON.stringify(Array.isArray(body) ? out : out[0]);
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(reply);
  })().catch((err: Error) => res.writeHead(502, { 'content-type': 'text/plain' }).end(err.message));
});

parentPort!.on('message', (m) => {
  if (m === 'stats') parentPort!.postMessage({ dropped });
});
server.listen(0, '127.0.0.1', () => parentPort!.postMessage({ port: (server.address() as { port: number }).port }));
