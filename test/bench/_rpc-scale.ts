/**
 * BENCH_RPC_SCALE=1,2 (worker counts; 1 = one process, RPC_WORKERS unset; more needs DATABASE_HOST): answers
 * that never reach anvil (the head's number, a balance at the head, a finalized block from the cache), so the
 * endpoint alone bounds them, served by one process and then by several, under the same autocannon load
 * (static bodies), with the node:http floor in the same run. Printed per run: requests/s, the gain over one
 * process, the ratio to the floor, the endpoint's CPU (workers included), autocannon's and the machine's idle
 * share: a second worker can only help while a core is idle.
 */
import { loadavg } from 'node:os';
import { chain, result, wallet } from '../rpc/helpers.js';
import { CONNECTIONS, load, startCalibrator } from './_load.js';
import { SECONDS, cores, entryName, fmt, startBenchEndpoint } from './rpc.js';

export async function scaling(counts: number[]): Promise<void> {
  const { anvil, provider } = await chain();
  const signer = wallet(0, provider);
  await provider.send('anvil_mine', ['0x80']);
  const finalized = (await result(anvil.url, 'eth_getBlockByNumber', ['finalized', false])) as { number: string };
  const req = (method: string, params: unknown[]) => [JSON.stringify({ jsonrpc: '2.0', id: 1, method, params })];
  const cases = [
    { name: 'eth_blockNumber (head)', bodies: req('eth_blockNumber', []) },
    { name: 'eth_getBalance latest (cache)', bodies: req('eth_getBalance', [signer.address, 'latest']) },
    { name: 'eth_getBlockByNumber final (cache)', bodies: req('eth_getBlockByNumber', [finalized.number, true]) },
  ];
  const [l1] = loadavg();
  console.log(
    `scaling: ${CONNECTIONS} connections, static bodies, ${SECONDS} s per run, database ${process.env.DATABASE_HOST ? 'PostgreSQL' : 'PGlite'}, endpoint: ${entryName()}, load before ${fmt(l1!)}, ${cores()} cores`,
  );
  const floor = await startCalibrator('node');
  const baseline = new Map<string, number>();
  try {
    const floors = new Map<string, number>();
    for (const c of cases) floors.set(c.name, (await load(floor, c.bodies, SECONDS)).rps);
    for (const workers of counts) {
      const endpoint = await startBenchEndpoint(`${workers}`, anvil.url, {
        RPC_TRANSPORT: 'node',
        ...(workers > 1 ? { RPC_WORKERS: String(workers) } : {}),
      }); // one stack for every count (auto takes uWS at 1 where it loads)
      try {
        for (const c of cases) await load(endpoint, c.bodies, 1); // warm: JIT, sockets, the cache entry
        for (const c of cases) {
          const r = await load(endpoint, c.bodies, SECONDS);
          if (workers === counts[0]) baseline.set(c.name, r.rps);
          console.log(
            `${String(workers).padStart(2)} process${workers > 1 ? 'es' : '  '} ${c.name.padEnd(36)} ${fmt(r.rps, 0).padStart(6)} req/s gain ${fmt(r.rps / baseline.get(c.name)!)}x ` +
              `${fmt(r.rps / floors.get(c.name)!)}x floor  p50 ${fmt(r.p50)} ms  endpoint ${fmt(r.cores ?? 0)} cores (${fmt(r.cpuUsPerReq ?? 0, 0)} µs/req)  ` +
              `autocannon ${fmt(r.loaderCores)} cores  machine idle ${fmt(100 * r.idle, 0)} %${r.bad > 0 ? `  BAD ${r.bad}` : ''}`,
          );
        }
      } finally {
        await endpoint.stop();
      }
    }
    console.log(
      `floor node:http, same run: ${cases.map((c) => `${c.name} ${fmt(floors.get(c.name)!, 0)} req/s`).join(', ')}`,
    );
  } finally {
    await floor.stop();
    await anvil.stop();
  }
}
