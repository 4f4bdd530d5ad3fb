/**
 * `npm run bench -- rpc`: the endpoint (`l2stack rpc` in its own process, embedded PGlite unless
 * DATABASE_HOST is set) against anvil directly, in the same run, 32 concurrent keep-alive clients:
 * eth_blockNumber, eth_getBalance, eth_call, eth_getLogs (one block with 1,000 logs) and
 * eth_getFilterChanges (one filter per client, polled in a loop). Prints throughput of both, the ratio,
 * and the latency the endpoint adds at p50 and p99. BENCH_SECONDS (default 4) per measurement.
 */
import http from 'node:http';
import { spawn } from 'node:child_process';
import { ethers } from 'ethers';
import { chain, deployOuter, result, wallet } from '../rpc/helpers.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONCURRENCY = 32;

interface Run {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/** CONCURRENCY loops, each sending its body back to back over one keep-alive connection. */
async function load(url: string, bodyFor: (worker: number) => string, seconds = SECONDS): Promise<Run> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const target = new URL(url);
  const latencies: number[] = [];
  let errors = 0;
  const deadline = performance.now() + seconds * 1000;
  const one = (body: string) =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      const req = http.request({ host: target.hostname, port: target.port, path: '/', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          latencies.push(performance.now() - started);
          const text = Buffer.concat(chunks).toString();
          if (res.statusCode !== 200 || text.includes('"error"')) errors++;
          resolve();
        });
      });
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(body);
    });
  const began = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, w) => {
      const body = bodyFor(w);
      while (performance.now() < deadline) await one(body);
    }),
  );
  const elapsed = (performance.now() - began) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / elapsed, p50: pct(latencies, 50), p99: pct(latencies, 99), errors };
}

async function startEndpoint(upstream: string): Promise<{ url: string; stop(): void }> {
  const bin = new URL('../../bin/l2stack.js', import.meta.url).pathname;
  const child = spawn(process.execPath, [bin, 'rpc'], {
    env: { ...process.env, DATABASE_PGLITE_DIR: 'memory://', LOG_LEVEL: 'warn', RPC_PORT: '0', RPC_UPSTREAM_URLS: upstream, RPC_RATE_LIMIT_PER_SECOND: '0', RPC_MAX_LOGS_RESULTS: '10000' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`l2stack rpc exited with ${code}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

export async function main(): Promise<void> {
  const { anvil, provider } = await chain();
  const signer = wallet(0, provider);
  const outer = await deployOuter(signer);
  const address = await outer.getAddress();
  const tx = (await outer.getFunction('note')(1n, ethers.id('bench'), 1000n, { gasLimit: 29_000_000n })) as ethers.TransactionResponse;
  const receipt = (await tx.wait())!;
  const endpoint = await startEndpoint(anvil.url);
  try {
    const logsBlock = `0x${receipt.blockNumber.toString(16)}`;
    const logsCount = ((await result(endpoint.url, 'eth_getLogs', [{ fromBlock: logsBlock, toBlock: logsBlock, address }])) as unknown[]).length;
    const req = (method: string, params: unknown[]) => () => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
    const filtersOn = async (url: string) => Promise.all(Array.from({ length: CONCURRENCY }, () => result(url, 'eth_newFilter', [{ address }]) as Promise<string>));
    const directFilters = await filtersOn(anvil.url);
    const endpointFilters = await filtersOn(endpoint.url);
    const cases: [string, (target: 'direct' | 'endpoint') => (w: number) => string][] = [
      ['eth_blockNumber', () => req('eth_blockNumber', [])],
      ['eth_getBalance', () => req('eth_getBalance', [signer.address, 'latest'])],
      ['eth_call', () => req('eth_call', [{ to: address, data: outer.interface.encodeFunctionData('inner') }, 'latest'])],
      [`eth_getLogs (${logsCount} logs)`, () => req('eth_getLogs', [{ fromBlock: logsBlock, toBlock: logsBlock, address }])],
      ['eth_getFilterChanges', (t) => (w) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getFilterChanges', params: [(t === 'direct' ? directFilters : endpointFilters)[w]] })],
    ];
    // Warm both paths (JIT, sockets) before measuring.
    await load(anvil.url, req('eth_blockNumber', []), 1);
    await load(endpoint.url, req('eth_blockNumber', []), 1);
    const rows: string[] = [];
    console.log(`${CONCURRENCY} concurrent clients, ${SECONDS} s per measurement, database ${process.env.DATABASE_HOST ? 'PostgreSQL' : 'PGlite'}`);
    for (const [name, bodies] of cases) {
      const direct = await load(anvil.url, bodies('direct'));
      const through = await load(endpoint.url, bodies('endpoint'));
      rows.push(
        [
          name.padEnd(28),
          `${direct.rps.toFixed(0).padStart(6)} req/s`,
          `${through.rps.toFixed(0).padStart(6)} req/s`,
          `${(through.rps / direct.rps).toFixed(2).padStart(5)}x`,
          `p50 ${direct.p50.toFixed(2)} -> ${through.p50.toFixed(2)} ms (+${(through.p50 - direct.p50).toFixed(2)})`,
          `p99 ${direct.p99.toFixed(2)} -> ${through.p99.toFixed(2)} ms (+${(through.p99 - direct.p99).toFixed(2)})`,
          direct.errors + through.errors > 0 ? `errors ${direct.errors}/${through.errors}` : '',
        ].join('  '),
      );
      console.log(rows[rows.length - 1]);
    }
    console.log(`\n${'method'.padEnd(28)}  ${'direct'.padStart(12)}  ${'endpoint'.padStart(12)}  ratio  added latency`);
    for (const r of rows) console.log(r);
  } finally {
    endpoint.stop();
    await anvil.stop();
  }
}
