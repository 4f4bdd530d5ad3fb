import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SOCKETS_PER_NODE, agentFor, pooledFetchRequest, pooledRpc } from '../../../src/common/chain/pool.js';
import { DEFAULT_CALL_TIMEOUT_MS, createProvider } from '../../../src/common/chain/provider.js';
import { waitFor } from '../../helpers/chain.js';

/**
 * Issue 18 item 4: the relayer logged `connect EMFILE`. Its calls to the nodes (ethers providers and the
 * raw calls of its health checks) now share a bounded keep-alive pool: a burst of 600 concurrent calls
 * to a slow node opens at most MAX_SOCKETS_PER_NODE sockets, and every call is answered.
 */

let server: Server;
let url: string;
let open = 0;
let maxOpen = 0;
let connections = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const call = JSON.parse(Buffer.concat(chunks).toString()) as { id: unknown; method: string };
      // A slow node: answers hold their socket long enough for the burst to pile up.
      setTimeout(() => {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({ jsonrpc: '2.0', id: call.id, result: call.method === 'eth_chainId' ? '0x7a69' : '0x10' }),
        );
      }, 20);
    });
  });
  server.on('connection', (socket) => {
    connections++;
    maxOpen = Math.max(maxOpen, ++open);
    socket.once('close', () => open--);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/**
 * Sockets the pool holds open and in use now for the node at `url`. Only that node's: the pool is the process's,
 * and another file of the same worker may still have a call of its own in flight.
 */
function activeSockets(url: string): number {
  const { hostname, port } = new URL(url);
  return Object.entries(agentFor(url).sockets)
    .filter(([name]) => name.startsWith(`${hostname}:${port}:`))
    .reduce((n, [, list]) => n + (list?.length ?? 0), 0);
}

/**
 * Waits (2 s at most) until no socket to `url` is open on either side, then asserts it, printing both counts. Both
 * are read: after a timeout Node's Agent gives each destroyed call still queued for a socket a new one when a socket
 * closes, which connects and closes at once, so the node side can read 0 while the pool's socket is still connecting
 * (a clean clone's `npm test` caught that on 2026-11-30, when the node side alone was awaited).
 */
async function released(url: string, nodeSide: () => number): Promise<void> {
  const state = () => ({ nodeSide: nodeSide(), pool: activeSockets(url) });
  await expect
    .poll(state, { timeout: 2_000, interval: 20, message: 'sockets to the node still open (node side, pool)' })
    .toEqual({ nodeSide: 0, pool: 0 });
}

describe('outgoing connection pool', () => {
  it('behavior: 600 concurrent provider, raw and pooled calls use at most MAX_SOCKETS_PER_NODE sockets', async () => {
    const provider = createProvider(url, 31_337);
    const calls = [
      ...Array.from({ length: 200 }, (_, i) =>
        provider.send('eth_getBalance', [`0x${i.toString(16).padStart(40, '0')}`, 'latest']),
      ),
      ...Array.from({ length: 200 }, () => pooledRpc<string>(url, 'eth_blockNumber', [], 30_000)),
      ...Array.from({ length: 200 }, () => pooledRpc<string>(url, 'eth_blockNumber', [], 30_000)),
    ];
    const results = await Promise.all(calls);
    provider.destroy();
    expect(results.every((r) => r === '0x10')).toBe(true);
    expect(maxOpen).toBeGreaterThan(1);
    expect(maxOpen).toBeLessThanOrEqual(MAX_SOCKETS_PER_NODE);
    process.stdout.write(`pool: 600 calls over ${connections} connections, at most ${maxOpen} open at once\n`);
  });

  it('error: a call queued behind a full pool still fails within its timeout', async () => {
    const hung = createServer(() => undefined); // accepts, never answers
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    const hungUrl = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
    try {
      const calls = Array.from({ length: MAX_SOCKETS_PER_NODE + 5 }, () =>
        pooledRpc(hungUrl, 'eth_blockNumber', [], 500).then(
          () => 'answered',
          (e: Error) => e.message,
        ),
      );
      expect(new Set(await Promise.all(calls))).toEqual(new Set(['no answer within 500 ms']));
    } finally {
      hung.closeAllConnections();
      await new Promise((resolve) => hung.close(resolve));
    }
  });

  it(
    'error: ethers calls to a node that accepts and never answers fail within their timeout, queued ones included, and give their sockets back',
    { timeout: 20_000 },
    async () => {
      let hungOpen = 0;
      let answering = false;
      const hung = createServer((req, res) => {
        if (!answering) return; // accepts, never answers
        req.resume();
        req.on('end', () => res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: '0x2a' })));
      });
      hung.on('connection', (socket) => {
        hungOpen++;
        socket.once('close', () => hungOpen--);
      });
      await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
      const hungUrl = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
      const call = (timeout: number) => {
        const request = pooledFetchRequest(hungUrl);
        request.timeout = timeout;
        request.body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] });
        request.setHeader('content-type', 'application/json');
        return request.send();
      };
      try {
        // More calls than the pool has sockets: the last five wait for a socket, and must time out all the same.
        const started = Date.now();
        const outcomes = await Promise.all(
          Array.from({ length: MAX_SOCKETS_PER_NODE + 5 }, () =>
            call(500).then(
              () => 'answered',
              (e: { code?: string }) => e.code,
            ),
          ),
        );
        expect(new Set(outcomes)).toEqual(new Set(['TIMEOUT']));
        expect(Date.now() - started).toBeLessThan(5_000);
        // Each timed-out request was destroyed: its socket closed, none is left taken from the pool.
        await released(hungUrl, () => hungOpen);
        // Once the node answers, the next call gets a socket and its answer.
        answering = true;
        const answer = await call(5_000);
        expect(answer.statusCode).toBe(200);
        expect(JSON.parse(answer.bodyText).result).toBe('0x2a');
      } finally {
        hung.closeAllConnections();
        await new Promise((resolve) => hung.close(resolve));
      }
    },
  );

  it('error: a cancelled ethers call is answered CANCELLED at once and frees its socket', async () => {
    let hungOpen = 0;
    const hung = createServer(() => undefined);
    hung.on('connection', (socket) => {
      hungOpen++;
      socket.once('close', () => hungOpen--);
    });
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    try {
      const hungUrl = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
      const request = pooledFetchRequest(hungUrl);
      request.body = '{}';
      const sent = request.send().then(
        () => 'answered',
        (e: { code?: string }) => e.code,
      );
      // Cancelled once the node holds the call's socket, not after a guessed pause.
      await waitFor('the node to accept the call', async () => (hungOpen === 1 ? true : undefined), 5_000, 5);
      request.cancel();
      expect(await sent).toBe('CANCELLED');
      await released(hungUrl, () => hungOpen);
    } finally {
      hung.closeAllConnections();
      await new Promise((resolve) => hung.close(resolve));
    }
  });

  it("error: createProvider bounds every call (ethers would wait 300 s): its default, and a timeout of the caller's own", async () => {
    const hung = createServer(() => undefined);
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    const hungUrl = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
    const defaulted = createProvider(hungUrl, 31_337);
    const own = createProvider(hungUrl, 31_337, { timeoutMs: 300 });
    try {
      expect(defaulted._getConnection().timeout).toBe(DEFAULT_CALL_TIMEOUT_MS);
      expect(DEFAULT_CALL_TIMEOUT_MS).toBeLessThanOrEqual(60_000);
      const started = Date.now();
      await expect(own.getBlockNumber()).rejects.toMatchObject({ code: 'TIMEOUT' });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      defaulted.destroy();
      own.destroy();
      hung.closeAllConnections();
      await new Promise((resolve) => hung.close(resolve));
    }
  });
});
