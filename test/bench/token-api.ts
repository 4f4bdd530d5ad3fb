/**
 * `npm run bench -- token-api`: the token API under autocannon (32 connections) with 10,000 tokens and 24 h
 * of hourly prices each, case by case against a bare express handler that returns a precomputed body of
 * the same size and type: the ratio is our throughput over the bare one, measured in the same run.
 * The servers run in a child process so the load generator does not share their event loop.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import express from 'express';
import { parseEther } from 'ethers';

const TOKENS = 10_000;
const CONNECTIONS = 32;
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;

interface Served {
  api: string;
  bare: string;
  backend: string;
  cases: { name: string; path: string; bytes: number }[];
}

async function serve(): Promise<void> {
  const { loadDatabaseConfig } = await import('../../src/common/db/config.js');
  const { createDbClient } = await import('../../src/common/db/client.js');
  const { createLogger } = await import('../../src/common/log.js');
  const { createMetrics } = await import('../../src/common/metrics.js');
  const { Shutdown } = await import('../../src/common/shutdown.js');
  const { createProvider } = await import('../../src/common/chain/provider.js');
  const { startAnvil } = await import('../../src/devnet/anvil.js');
  const { NativeToken__factory } = await import('../../generated/contracts/types/index.js');
  const { startTokenApi } = await import('../../src/token-api/index.js');
  const { listen } = await import('../../src/common/http/server.js');

  const logger = createLogger({ level: 'warn', destination: process.stderr });
  const common = { logger, metrics: createMetrics(), shutdown: new Shutdown(logger) };
  const db = await createDbClient(loadDatabaseConfig(process.env));
  const schema = `bench_token_api_${process.pid}`;
  const anvil = await startAnvil({ port: 0, chainId: 31_337 });
  const deployer = await createProvider(anvil.url, 31_337).getSigner(0);
  const native = await new NativeToken__factory(deployer).deploy('Native', 'NAT', await deployer.getAddress(), parseEther('1000000000'));
  await native.waitForDeployment();
  const nativeAddress = (await native.getAddress()).toLowerCase();

  const api = await startTokenApi({
    common, db, schema,
    config: {
      host: '127.0.0.1', port: 0, publicUrl: undefined, cacheMaxAgeSeconds: 30, responseCacheMs: Number(process.env.BENCH_RESPONSE_CACHE_MS ?? 2_000),
      nativeToken: nativeAddress, excludedWallets: [{ address: addr(0xbeef), label: 'Treasury', status: 'active' }], supplyRefreshMs: 60_000,
      rpcUrl: anvil.url, indexer: undefined,
    },
  });
  await api.supply!.refresh();

  const now = Date.now();
  const rows = Array.from({ length: TOKENS }, (_, i) => {
    const priced = i % 10 !== 0;
    const price = priced ? 0.01 + ((i * 7919) % 100_000) / 100 : null;
    const supply = `${1_000_000 + ((i * 104_729) % 1_000_000_000)}.${i % 1000}`;
    const variation = priced ? (((i * 31) % 200) - 100) / 3 : null;
    return {
      address: addr(i + 1), name: `Token ${i}`, symbol: `T${i}`, decimals: 18, total_supply_raw: '0', total_supply: supply, total_supply_num: supply,
      current_price: price, price_updated_at: priced ? new Date(now - 60_000) : null, last24h_variation: variation,
      last24h_variation_abs: variation === null ? null : Math.abs(variation), fdv: price === null ? null : price * Number(supply),
      buys: (i * 13) % 5000, sells: (i * 17) % 5000, swaps: ((i * 13) % 5000) + ((i * 17) % 5000), is_possible_spam: i % 50 === 0,
      is_secure: i % 4 === 0, list_logo: i % 3 === 0 ? `https://tokens.example.org/${i}.png` : null,
    };
  });
  for (let i = 0; i < rows.length; i += 1_000) await db.knex(`${schema}.tokens`).insert(rows.slice(i, i + 1_000));
  const hour = (t: number) => new Date(Math.floor(t / 3_600_000) * 3_600_000);
  for (let i = 0; i < TOKENS; i += 200) {
    const batch = [];
    for (let k = i; k < Math.min(i + 200, TOKENS); k++) {
      for (let h = 0; h < 24; h++) {
        const at = now - h * 3_600_000 - 60_000;
        batch.push({ token: addr(k + 1), hour: hour(at), price: 1 + ((k + h) % 100) / 10, observed_at: new Date(at) });
      }
    }
    await db.knex(`${schema}.prices`).insert(batch);
  }
  await db.knex.raw('analyze ??.tokens', [schema]);
  await db.knex.raw('analyze ??.prices', [schema]);

  const cases = [
    { name: 'list default', path: '/tokens' },
    { name: 'list swaps desc isSecure', path: '/tokens?order=swaps&sort=desc&isSecure=true' },
    { name: 'one token', path: `/tokens/${addr(4242)}` },
    { name: 'prices 100 addresses', path: `/prices?addresses=${Array.from({ length: 100 }, (_, i) => addr(i * 97 + 1)).join(',')}` },
    { name: 'supply raw', path: `/tokens/${nativeAddress}/supply/total` },
  ];
  const bare = express();
  bare.disable('x-powered-by');
  bare.set('etag', false);
  const served: Served['cases'] = [];
  for (const [i, c] of cases.entries()) {
    const res = await fetch(`${api.url}${c.path}`);
    if (res.status !== 200) throw new Error(`${c.name}: ${res.status} ${await res.text()}`);
    const body = Buffer.from(await res.arrayBuffer());
    const type = res.headers.get('content-type')!;
    bare.get(`/case/${i}`, (_req, r) => void r.type(type).send(body));
    served.push({ ...c, bytes: body.length });
  }
  const bareServer = await listen(bare, '127.0.0.1', 0, 'bare');
  process.stdout.write(`${JSON.stringify({ api: api.url, bare: bareServer.url, backend: db.kind, cases: served } satisfies Served)}\n`);

  const stop = async () => {
    await bareServer.close();
    await common.shutdown.run('bench done');
    if (db.kind === 'postgres') await db.knex.raw('drop schema if exists ?? cascade', [schema]);
    await db.close();
    await anvil.stop();
    process.exit(0);
  };
  process.stdin.on('end', () => void stop());
  process.stdin.resume();
}

function run(url: string, duration = DURATION_S): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections: CONNECTIONS, duration, pipelining: 1 }, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

export async function main(): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  const served = JSON.parse(line) as Served;
  console.log(`${TOKENS} tokens × 24 hourly prices, database ${served.backend}, autocannon ${CONNECTIONS} connections, medians of ${ROUNDS} alternating ${DURATION_S} s runs`);
  const rows: string[][] = [];
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [i, c] of served.cases.entries()) {
    await run(`${served.api}${c.path}`, 2); // warm-up: first queries, JIT, response cache
    // Alternate short runs and take medians: on a shared machine the load drifts between runs.
    const ours: autocannon.Result[] = [];
    const bare: autocannon.Result[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      ours.push(await run(`${served.api}${c.path}`));
      bare.push(await run(`${served.bare}/case/${i}`));
    }
    const bad = ours.reduce((n, r) => n + r.non2xx + r.errors, 0);
    if (bad > 0) console.log(`warning: ${c.name}: ${bad} non-2xx or failed requests`);
    const rps = (rs: autocannon.Result[]) => median(rs.map((r) => r.requests.average));
    rows.push([
      c.name, String(c.bytes),
      rps(ours).toFixed(0), String(median(ours.map((r) => r.latency.p50))), String(median(ours.map((r) => r.latency.p99))),
      rps(bare).toFixed(0), String(median(bare.map((r) => r.latency.p50))), String(median(bare.map((r) => r.latency.p99))),
      (rps(ours) / rps(bare)).toFixed(2),
    ]);
  }
  const head = ['case', 'bytes', 'req/s', 'p50 ms', 'p99 ms', 'bare req/s', 'bare p50', 'bare p99', 'ratio'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]) => r.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  console.log(fmt(head));
  for (const r of rows) console.log(fmt(r));
  child.stdin!.end();
  await new Promise((r) => child.once('exit', r));
}

if (process.argv.includes('--serve')) {
  serve().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
