import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ethers } from 'ethers';
import WebSocket from 'ws';
import { deployOuter, forwardTo, wallet } from '../rpc/helpers.js';
import { mined } from '../../src/common/chain/mined.js';

/** One JSON-RPC answer as a raw WebSocket client sees it. */
export interface WsAnswer {
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * A raw WebSocket client (the `ws` package, as a script would use): calls by id, notifications by
 * subscription id, and the `error` a subscription may end with. `forwardedFor` sets X-Forwarded-For, so
 * behind RPC_TRUSTED_PROXY_HOPS=1 each value is another client of the rate limit and the caps; `localAddress`
 * (e.g. 127.0.0.2) makes it another client without a proxy.
 */
export async function wsClient(url: string, forwardedFor?: string, localAddress?: string) {
  const ws = new WebSocket(url, {
    headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
    maxPayload: 256 * 1024 * 1024,
    localAddress,
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.on('error', () => undefined);
  let id = 1;
  const waiting = new Map<number, (v: WsAnswer) => void>();
  const notes = new Map<string, number>();
  const last = new Map<string, unknown>();
  const ended = new Map<string, { code: number; message: string }>();
  let bytes = 0;
  ws.on('message', (data: Buffer) => {
    bytes += data.length;
    const msg = JSON.parse(data.toString()) as {
      id?: number;
      method?: string;
      params?: { subscription: string; result?: unknown; error?: { code: number; message: string } };
    };
    if (msg.method === 'eth_subscription') {
      const p = msg.params!;
      if (p.error) ended.set(p.subscription, p.error);
      else {
        notes.set(p.subscription, (notes.get(p.subscription) ?? 0) + 1);
        last.set(p.subscription, p.result);
      }
    } else waiting.get(msg.id!)?.(msg as WsAnswer);
  });
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  return {
    ws,
    closed,
    /** Notifications received for a subscription so far. */
    count: (sub: string) => notes.get(sub) ?? 0,
    ended: (sub: string) => ended.get(sub),
    /** The last notification's result of a subscription. */
    last: (sub: string) =>
      last.get(sub) as { blockNumber?: string; blockHash?: string; logIndex?: string; topics?: string[] } | undefined,
    received: () => bytes,
    call(method: string, params: unknown[] = []): Promise<WsAnswer> {
      const n = id++;
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: n, method, params }));
      return new Promise<WsAnswer>((resolve) => waiting.set(n, resolve));
    },
    close() {
      ws.close();
      return closed;
    },
  };
}

export type WsClient = Awaited<ReturnType<typeof wsClient>>;

/** `n` distinct addresses (none of them a contract), different for each `seed`. */
export const addresses = (seed: number, n: number) =>
  Array.from({ length: n }, (_, i) => `0x${(seed * 1_000_000 + i + 1).toString(16).padStart(40, '0')}`);

/** A value of the endpoint's /metrics (summed over series matching `labels`); 0 when absent. */
export async function metric(url: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (labels && !line.includes(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/**
 * Makes one block with one log every `everyMs` (Outer.note from account `from`) until stopped: the
 * traffic a normal subscriber follows while a recipe runs.
 */
export async function logTraffic(provider: ethers.JsonRpcProvider, from: number, everyMs = 250) {
  const outer = await deployOuter(wallet(from, provider));
  const address = (await outer.getAddress()).toLowerCase();
  let stopped = false;
  let sent = 0;
  const loop = (async () => {
    while (!stopped) {
      const tx = (await outer.getFunction('note')(
        BigInt(sent),
        ethers.id('traffic'),
        1n,
      )) as ethers.TransactionResponse;
      await mined(tx);
      sent++;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    address,
    outer,
    sent: () => sent,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/**
 * A normal WebSocket user: subscribed to newHeads and to the logs of one address. `progress` waits until
 * both have received more than they had when it was called (the recipe's attack did not stop them).
 */
export async function normalSubscriber(wsUrl: string, address: string) {
  const c = await wsClient(wsUrl);
  const heads = (await c.call('eth_subscribe', ['newHeads'])).result as string;
  const logs = (await c.call('eth_subscribe', ['logs', { address }])).result as string;
  if (typeof heads !== 'string' || typeof logs !== 'string')
    throw new Error('the normal subscriber could not subscribe');
  return {
    client: c,
    heads: () => c.count(heads),
    logs: () => c.count(logs),
    ended: () => c.ended(logs) ?? c.ended(heads),
    /** Resolves once at least `n` more heads and logs arrived; rejects after `timeoutMs`. */
    async progress(n: number, timeoutMs = 20_000) {
      const h0 = c.count(heads);
      const l0 = c.count(logs);
      const until = Date.now() + timeoutMs;
      while (c.count(heads) < h0 + n || c.count(logs) < l0 + n) {
        if (Date.now() > until)
          throw new Error(
            `the normal subscriber got ${c.count(heads) - h0} heads and ${c.count(logs) - l0} logs in ${timeoutMs} ms, expected ${n} each`,
          );
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

/** One call as the node saw it. */
export interface NodeCall {
  method: string;
  bodyBytes: number;
  /** eth_getLogs: addresses in the criteria (undefined: none, every address). */
  addresses?: number;
  /** eth_getLogs by range (a resume or a gap), not by block hash. */
  range?: boolean;
  /** eth_getBlockByNumber: the block asked for. */
  block?: number;
}

/**
 * A node with a request body limit in front of anvil (HTTP 413 past `maxBodyBytes`, as a proxy or a
 * node's own limit answers), recording every call it sees, so a test can count the endpoint's upstream
 * work and prove no request it sent was over the limit.
 */
export async function recordingNode(targetUrl: string, maxBodyBytes: number) {
  const calls: NodeCall[] = [];
  const refused: number[] = [];
  const target = new URL(targetUrl);
  const server: Server = createServer((req, res) => {
    // The endpoint tries a newHeads WebSocket on every upstream: this plain HTTP node refuses it (it polls).
    if (req.method !== 'POST') {
      res.statusCode = 405;
      res.end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= maxBodyBytes) chunks.push(c);
    });
    req.on('end', () => {
      if (size > maxBodyBytes) {
        refused.push(size);
        res.writeHead(413, { 'content-type': 'text/plain', connection: 'close' });
        res.end('request entity too large');
        return;
      }
      const body = Buffer.concat(chunks);
      const parsed = JSON.parse(body.toString()) as
        { method: string; params?: unknown[] } | { method: string; params?: unknown[] }[];
      for (const c of Array.isArray(parsed) ? parsed : [parsed]) {
        const p0 = c.params?.[0] as { address?: unknown; fromBlock?: unknown } | string | undefined;
        const call: NodeCall = { method: c.method, bodyBytes: size };
        if (c.method === 'eth_getLogs' && typeof p0 === 'object' && p0) {
          call.addresses = p0.address === undefined ? undefined : Array.isArray(p0.address) ? p0.address.length : 1;
          call.range = p0.fromBlock !== undefined;
        }
        if (c.method === 'eth_getBlockByNumber' && typeof p0 === 'string' && p0.startsWith('0x'))
          call.block = Number(BigInt(p0));
        calls.push(call);
      }
      forwardTo(target, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    refused,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** Resident set size of a child process (anvil) in MiB, from /proc. */
export function childRssMiB(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}
