/**
 * `npm run bench -- rpc-ws`: the endpoint's WebSocket side against anvil's own, in the same run.
 * 1. Notification latency: 1,000 sockets subscribed to newHeads and 100 to logs, on the endpoint
 *    (`l2stack rpc` in its own process, PGlite unless DATABASE_HOST is set) and on anvil directly; BENCH_BLOCKS blocks
 *    (default 40), each made by one transaction that emits a log, BENCH_GAP_MS apart (default 300). Latency = arrival
 *    at a socket − the moment the transaction was sent; p50/p99 over every socket and block, per side, and
 *    the endpoint's CPU per notification sent.
 * 2. Request latency of eth_blockNumber from one client, one call at a time: over WebSocket vs over
 *    HTTP keep-alive, on the endpoint (and anvil's WebSocket for reference).
 * 3. Slow readers: 100 sockets that ask for ~2.5 MB of logs each and never read: under the per-socket cap
 *    (4 MiB), over the total cap this endpoint runs with (RPC_WS_MAX_TOTAL_BUFFERED_BYTES = 64 MiB), so the
 *    heaviest are cut off; the endpoint's RSS is printed before, at its peak and after.
 */
import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import { ethers } from 'ethers';
import WebSocket from 'ws';
import { chain, deployOuter, wallet } from '../rpc/helpers.js';
import { cpuSeconds, rssMiB, startEndpoint } from './_rpc-endpoint.js';
import { mined } from '../../src/common/chain/mined.js';

const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 40);
const GAP_MS = Number(process.env.BENCH_GAP_MS ?? 300);
const HEAD_SOCKETS = 1_000;
const LOG_SOCKETS = 100;
const CALLS = 2_000;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const fmt = (n: number) => n.toFixed(2);

/** Opens `n` sockets, each subscribed with `params`; every notification's arrival time is recorded by block number. */
async function subscribers(
  wsUrl: string,
  n: number,
  params: unknown[],
  arrivals: Map<number, number[]>,
): Promise<WebSocket[]> {
  const sockets: WebSocket[] = [];
  for (let start = 0; start < n; start += 100) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(100, n - start) }, async () => {
        const ws = new WebSocket(wsUrl, { perMessageDeflate: false });
        await new Promise<void>((resolve, reject) => {
          ws.once('open', () => resolve());
          ws.once('error', reject);
        });
        await new Promise<void>((resolve, reject) => {
          ws.on('message', (d) => {
            const now = performance.now();
            const msg = JSON.parse(d.toString()) as {
              id?: number;
              error?: unknown;
              params?: { result: { number?: string; blockNumber?: string } };
            };
            if (msg.id === 1) return msg.error ? reject(new Error(JSON.stringify(msg.error))) : resolve();
            const r = msg.params?.result;
            const block = Number(r?.number ?? r?.blockNumber);
            const list = arrivals.get(block) ?? [];
            list.push(now);
            arrivals.set(block, list);
          });
          ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params }));
        });
        return ws;
      }),
    );
    sockets.push(...batch);
  }
  return sockets;
}

async function callLatency(send: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    await send();
    out.push(performance.now() - t);
  }
  return out;
}

function wsCaller(wsUrl: string): Promise<{ call(): Promise<void>; close(): void }> {
  const ws = new WebSocket(wsUrl, { perMessageDeflate: false });
  let id = 0;
  const waiting = new Map<number, () => void>();
  ws.on('message', (d) => waiting.get((JSON.parse(d.toString()) as { id: number }).id)?.());
  return new Promise((resolve) =>
    ws.once('open', () =>
      resolve({
        call: () =>
          new Promise<void>((done) => {
            const n = ++id;
            waiting.set(n, done);
            ws.send(`{"jsonrpc":"2.0","id":${n},"method":"eth_blockNumber","params":[]}`);
          }),
        close: () => ws.close(),
      }),
    ),
  );
}

function httpCaller(url: string): () => Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const body = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';
  return () =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve());
        },
      );
      req.on('error', reject);
      req.end(body);
    });
}

export async function main(): Promise<void> {
  const { anvil, provider } = await chain();
  const endpoint = await startEndpoint(anvil.url, {
    RPC_WS_MAX_SOCKETS: '5000',
    RPC_WS_MAX_SOCKETS_PER_CLIENT: '0',
    HTTP_MAX_CONNECTIONS: '8000',
    HTTP_MAX_CONNECTIONS_PER_CLIENT: '0',
    RPC_WS_MAX_TOTAL_BUFFERED_BYTES: String(64 * 1024 * 1024),
  });
  const outer = await deployOuter(wallet(0, provider));
  const address = await outer.getAddress();
  const sides = [
    { name: 'anvil (direct)', ws: anvil.url.replace('http', 'ws') },
    { name: 'l2stack rpc', ws: endpoint.url.replace('http', 'ws') },
  ];
  const heads = sides.map(() => new Map<number, number[]>());
  const logs = sides.map(() => new Map<number, number[]>());
  const sockets: WebSocket[] = [];
  for (const [i, side] of sides.entries()) {
    sockets.push(...(await subscribers(side.ws, HEAD_SOCKETS, ['newHeads'], heads[i]!)));
    sockets.push(...(await subscribers(side.ws, LOG_SOCKETS, ['logs', { address }], logs[i]!)));
  }
  console.log(
    `${sockets.length} sockets subscribed (${HEAD_SOCKETS} newHeads + ${LOG_SOCKETS} logs per side); load average ${loadavg().map(fmt).join(' ')}`,
  );

  const sentAt = new Map<number, number>();
  const signer = wallet(1, provider);
  const contract = outer.connect(signer) as ethers.Contract;
  let nonce = await provider.getTransactionCount(signer.address);
  const cpuBefore = cpuSeconds(endpoint.pid);
  const first = (await provider.getBlockNumber()) + 1;
  for (let b = 0; b < BLOCKS; b++) {
    const t = performance.now();
    const tx = (await contract.getFunction('note')(b, ethers.ZeroHash, 1, {
      nonce: nonce++,
      gasLimit: 60_000,
    })) as ethers.TransactionResponse;
    const receipt = await mined(tx);
    sentAt.set(receipt!.blockNumber, t);
    await new Promise((r) => setTimeout(r, GAP_MS));
  }
  await new Promise((r) => setTimeout(r, 2_000));
  const cpu = cpuSeconds(endpoint.pid) - cpuBefore;
  const last = first + BLOCKS - 1;

  console.log(
    "\nnotification latency, ms from sending the block's transaction to arrival (every socket, every block):",
  );
  console.log('| side | kind | received / expected | p50 | p99 |');
  console.log('|---|---|---|---|---|');
  let endpointNotes = 0;
  for (const [i, side] of sides.entries()) {
    for (const [kind, map, perBlock] of [
      ['newHeads', heads[i]!, HEAD_SOCKETS],
      ['logs', logs[i]!, LOG_SOCKETS],
    ] as const) {
      const lat: number[] = [];
      let received = 0;
      for (let b = first; b <= last; b++) {
        for (const at of map.get(b) ?? []) lat.push(at - sentAt.get(b)!);
        received += map.get(b)?.length ?? 0;
      }
      if (i === 1) endpointNotes += received;
      console.log(
        `| ${side.name} | ${kind} | ${received} / ${perBlock * BLOCKS} | ${fmt(pct(lat, 50))} | ${fmt(pct(lat, 99))} |`,
      );
    }
  }
  console.log(
    `endpoint CPU: ${fmt(cpu * 1000)} ms for ${endpointNotes} notifications = ${fmt((cpu * 1e6) / Math.max(1, endpointNotes))} µs per notification (includes its head tracking and one eth_getLogs per block)`,
  );
  for (const s of sockets) s.terminate();

  console.log(`\neth_blockNumber, one client, ${CALLS} calls one at a time:`);
  console.log('| transport | p50 ms | p99 ms |');
  console.log('|---|---|---|');
  const rows: [string, number[]][] = [];
  const anvilWs = await wsCaller(sides[0]!.ws);
  rows.push(['anvil WebSocket', await callLatency(anvilWs.call)]);
  anvilWs.close();
  rows.push(['l2stack rpc HTTP keep-alive', await callLatency(httpCaller(endpoint.url))]);
  const ours = await wsCaller(sides[1]!.ws);
  rows.push(['l2stack rpc WebSocket', await callLatency(ours.call)]);
  ours.close();
  for (const [name, lat] of rows) console.log(`| ${name} | ${fmt(pct(lat, 50))} | ${fmt(pct(lat, 99))} |`);
  console.log(`load average ${loadavg().map(fmt).join(' ')}`);

  // 3. Slow readers.
  const before = rssMiB(endpoint.pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(endpoint.pid))), 100);
  const slow = await Promise.all(
    Array.from({ length: 100 }, async () => {
      const ws = new WebSocket(sides[1]!.ws, { perMessageDeflate: false });
      ws.on('error', () => undefined);
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('close', (code) => reject(new Error(`closed before open: ${code}`)));
      });
      // A paused client reads nothing (not even the close), so the cut-offs are counted at the server.
      (ws as unknown as { _socket: { pause(): void } })._socket.pause();
      for (let i = 0; i < 100; i++)
        ws.send(
          JSON.stringify({
            jsonrpc: '2.0',
            id: i,
            method: 'eth_getLogs',
            params: [{ fromBlock: '0x0', toBlock: 'latest', address }],
          }),
        );
      return ws;
    }),
  );
  const slowClosed = async () => {
    const text = await (await fetch(`${endpoint.url}/metrics`)).text();
    let n = 0;
    for (const m of text.matchAll(/l2stack_rpc_ws_closed_total\{reason="(?:slow|total)"\} (\d+)/g)) n += Number(m[1]);
    return n;
  };
  const deadline = Date.now() + 60_000;
  // Done when the count stops moving for 3 s (not every socket needs cutting to get under the total cap).
  let cutOff = -1;
  for (let stable = 0; stable < 12 && Date.now() < deadline;) {
    await new Promise((r) => setTimeout(r, 250));
    const n = await slowClosed();
    stable = n === cutOff ? stable + 1 : 0;
    cutOff = n;
  }
  await new Promise((r) => setTimeout(r, 3_000));
  for (const ws of slow) ws.terminate();
  clearInterval(sampler);
  const after = rssMiB(endpoint.pid);
  console.log(
    `\nslow readers: 100 sockets × 100 eth_getLogs answers never read; cut off by the server: ${cutOff} of 100 (RPC_WS_MAX_TOTAL_BUFFERED_BYTES 64 MiB); endpoint RSS ${fmt(before)} MiB before, ${fmt(peak)} MiB at peak, ${fmt(after)} MiB after`,
  );

  await endpoint.stop();
  await anvil.stop();
}
