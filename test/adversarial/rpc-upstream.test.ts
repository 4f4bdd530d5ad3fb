import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Anvil } from '../../src/devnet/anvil.js';
import { post } from '../rpc/helpers.js';
import { blockNumberCanary, chain, openTestDb, rssMiB, startRpcUnderTest, type RpcUnderTest } from './rpc-harness.js';

/**
 * Issue 18, item 1: upstream reads were merged into batches of up to 50 whatever their size; a merged
 * batch over the node's body limit (~2 MiB for anvil) made the node close early, `write EPIPE` was an
 * unhandled error that ended the process, and through a proxy the node was marked down for everyone.
 * Real anvil, real sockets; a normal client polls eth_blockNumber throughout and must never fail.
 */
let anvil: Anvil;
let db: Awaited<ReturnType<typeof openTestDb>>;
const stops: (() => Promise<unknown>)[] = [];

// The other engineer's filter caps refuse 22,000 addresses by default: lifted so the bodies reach the node.
const LIFT_CAPS = { RPC_MAX_FILTER_ADDRESSES: '1000000' };

type Reply = { id: unknown; result?: unknown; error?: { code: number; message: string; data?: unknown } };

/** eth_getLogs with `n` distinct addresses: 22,000 make a ~990 KB body, just under RPC_MAX_BODY_BYTES. */
const bigGetLogs = (id: number, n: number) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'eth_getLogs',
    params: [
      {
        fromBlock: '0x0',
        toBlock: 'latest',
        address: Array.from({ length: n }, (_, i) => `0x${(id * 1_000_000 + i).toString(16).padStart(40, '0')}`),
      },
    ],
  });

async function rpc(env: Record<string, string> = {}): Promise<RpcUnderTest> {
  const r = await startRpcUnderTest({ db, schema: db.schema('rpc'), anvil, env: { ...LIFT_CAPS, ...env } });
  stops.push(r.stop);
  return r;
}

/**
 * A node behind a body limit: proxies to anvil, but a request body past `limit` bytes is answered as
 * the node chooses — the socket destroyed mid-body (`close`, like anvil past 2 MiB) or HTTP 413 (`413`,
 * like a proxy) — so the endpoint must not take it for a dead node.
 */
async function limitedNode(limit: number, mode: 'close' | '413'): Promise<{ url: string; refused: () => number }> {
  let refused = 0;
  const target = new URL(anvil.url);
  const server: Server = createServer((req, res) => {
    // The endpoint tries a newHeads WebSocket on every upstream; these plain HTTP nodes refuse it.
    if (req.method !== 'POST') {
      res.statusCode = 405;
      res.end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let cut = false;
    req.on('data', (c: Buffer) => {
      if (cut) return;
      size += c.length;
      if (size > limit) {
        cut = true;
        refused++;
        if (mode === 'close') req.socket.destroy();
        else res.writeHead(413, { connection: 'close' }).end('payload too large');
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (cut) return;
      const up = request(
        {
          host: target.hostname,
          port: target.port,
          method: 'POST',
          path: '/',
          headers: { 'content-type': 'application/json' },
        },
        (r) => {
          res.writeHead(r.statusCode ?? 200, { 'content-type': 'application/json' });
          r.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      up.end(Buffer.concat(chunks));
    });
    req.on('error', () => undefined);
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  stops.push(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, refused: () => refused };
}

async function upstreamUp(url: string, id: string): Promise<boolean> {
  const metrics = await (await fetch(`${url}/metrics`)).text();
  return new RegExp(`l2stack_rpc_upstream_up\\{upstream="${id}"\\} 1`).test(metrics);
}

beforeAll(async () => {
  ({ anvil } = await chain());
  db = await openTestDb();
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await anvil?.stop();
  await db?.close();
});

describe('adversarial: upstream path', () => {
  it('behavior: 20 concurrent ~990 KB eth_getLogs (twice): each answered or a clear error, endpoint and node stay up', async () => {
    const endpoint = await rpc();
    const canary = blockNumberCanary('rpc-upstream 990KB getLogs', endpoint.url);
    const rssBefore = rssMiB();
    const outcomes = { answered: 0, refused: [] as string[] };
    for (let round = 0; round < 2; round++) {
      const replies = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const body = bigGetLogs(round * 20 + i + 1, 22_000);
          expect(body.length).toBeGreaterThan(980_000);
          const r = await post(endpoint.url, body);
          expect(r.status).toBe(200);
          return JSON.parse(r.text) as Reply;
        }),
      );
      for (const r of replies) {
        if (r.error) {
          // A clear error: a cap or the node's size limit, named; never an internal error.
          expect([-32005, -32002]).toContain(r.error.code);
          expect(r.error.message).toMatch(/RPC_|too large|request/);
          outcomes.refused.push(r.error.message);
        } else {
          expect(r.result).toEqual([]);
          outcomes.answered++;
        }
      }
    }
    const report = await canary.stop();
    process.stdout.write(
      `990KB getLogs: ${outcomes.answered} answered, ${outcomes.refused.length} refused; RSS ${rssBefore} -> ${rssMiB()} MiB\n`,
    );
    expect(report.failed).toBe(0);
    expect(outcomes.answered).toBeGreaterThan(0);
    expect(await upstreamUp(endpoint.url, 'u0')).toBe(true);
    expect((await fetch(`${endpoint.url}/health/ready`)).status).toBe(200);
  });

  it('behavior: many mid-size reads of one turn go upstream in batches under RPC_UPSTREAM_MAX_BATCH_BYTES, never one oversize batch', async () => {
    // A 600 KB node limit: the old merged batch (8 x 120 KB = 960 KB, under our 1 MiB body cap) was cut;
    // batches under the default RPC_UPSTREAM_MAX_BATCH_BYTES (512 KiB) pass.
    const node = await limitedNode(600_000, 'close');
    const endpoint = await rpc({ RPC_UPSTREAM_URLS: node.url });
    const canary = blockNumberCanary('rpc-upstream batch bytes', endpoint.url);
    const batch = `[${Array.from({ length: 8 }, (_, i) => bigGetLogs(i + 1, 2_700)).join(',')}]`;
    expect(batch.length).toBeGreaterThan(900_000);
    const replies = JSON.parse((await post(endpoint.url, batch)).text) as Reply[];
    const report = await canary.stop();
    expect(report.failed).toBe(0);
    expect(replies.filter((r) => r.error)).toEqual([]);
    expect(replies).toHaveLength(8);
    expect(node.refused()).toBe(0);
  });

  for (const mode of ['close', '413'] as const) {
    it(`behavior: a node that refuses big bodies (${mode === 'close' ? 'closes the socket mid-body' : 'HTTP 413'}) does not crash the endpoint and is not marked down`, async () => {
      const node = await limitedNode(256 * 1024, mode);
      const alone = await rpc({ RPC_UPSTREAM_URLS: node.url });
      const withBackup = await rpc({ RPC_UPSTREAM_URLS: `${node.url},${anvil.url}` });
      const canary = blockNumberCanary(`rpc-upstream node refuses big bodies (${mode})`, alone.url);

      // Single big calls: alone they fail with -32005 naming the node's refusal; with a backup they fail over.
      const big = await Promise.all(Array.from({ length: 10 }, (_, i) => post(alone.url, bigGetLogs(i + 1, 10_000))));
      for (const r of big) {
        const reply = JSON.parse(r.text) as Reply;
        expect(reply.error?.code).toBe(-32005);
        expect(reply.error?.message).toMatch(
          /request too large for the upstream nodes: u0: the node (closed the connection while receiving|refused) a \d+-byte request/,
        );
      }
      const failedOver = await Promise.all(
        Array.from({ length: 5 }, (_, i) => post(withBackup.url, bigGetLogs(i + 1, 10_000))),
      );
      for (const r of failedOver) expect(JSON.parse(r.text)).toMatchObject({ result: [] });

      // A batch of mid-size reads over the node's limit together is split until each part passes.
      const batch = `[${Array.from({ length: 8 }, (_, i) => bigGetLogs(i + 1, 2_000)).join(',')}]`;
      const replies = JSON.parse((await post(alone.url, batch)).text) as Reply[];
      expect(replies.map((r) => r.result)).toEqual(Array.from({ length: 8 }, () => []));

      const report = await canary.stop();
      expect(report.failed).toBe(0);
      expect(node.refused()).toBeGreaterThan(0);
      for (const e of [alone, withBackup]) {
        expect(await upstreamUp(e.url, 'u0')).toBe(true);
        expect((await fetch(`${e.url}/health/ready`)).status).toBe(200);
        expect(e.logs.filter((l) => l.level >= 50)).toEqual([]);
      }
    });
  }
});
