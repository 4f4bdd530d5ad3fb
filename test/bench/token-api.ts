/**
 * `npm run bench -- token-api`: the token API under autocannon with 10,000 tokens and 24 h of hourly
 * prices, candles and a price explanation each, case by case against a bare express handler that returns a precomputed
 * body of the same size and type: the ratio is our throughput over the bare one, measured in the same run. Two replicas
 * serve the same schema: one as configured by default, one with the per-address rate limit checked on every
 * request (a limit nothing reaches: the check's cost); each case is measured on both, side by side. Most cases
 * send a different URL with every request (random pages, orders, addresses), as wallets and explorers do.
 * The servers run in a child process so the load generator does not share their event loop; CPU per
 * request is that process's CPU time (utime + stime from /proc) over the requests answered in a run.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import express from 'express';
import { parseEther } from 'ethers';
import { loadOpenApi, resolveRef } from '../../src/common/http/spec.js';

const TOKENS = 10_000;
const CONNECTIONS = 32;
const WIDE_CONNECTIONS = Number(process.env.BENCH_WIDE_CONNECTIONS ?? 1_000);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
/** Every `order` value, read from the spec (components.schemas.OrderColumns). */
const ORDERS = resolveRef(loadOpenApi('token-api.openapi.yaml'), { $ref: '#/components/schemas/OrderColumns' })
  .enum as string[];

/** A small deterministic generator, so every run sends the same URL sequence. */
function lcg(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s % n;
  };
}

interface Case {
  name: string;
  /** A fixed path, or a generator of a fresh path per request. */
  path: string | ((rand: (n: number) => number) => string);
}

function cases(native: string): Case[] {
  return [
    {
      name: 'list mix (distinct URLs)',
      path: (r) => {
        const secure = ['', '&isSecure=true', '&isSecure=false'][r(3)];
        return `/tokens?page=${1 + r(200)}&order=${ORDERS[r(ORDERS.length)]}&sort=${r(2) ? 'asc' : 'desc'}${secure}`;
      },
    },
    { name: 'one token (random of 10k)', path: (r) => `/tokens/${addr(1 + r(TOKENS))}` },
    {
      name: 'prices 100 random addresses',
      path: (r) => `/prices?addresses=${Array.from({ length: 100 }, () => addr(1 + r(TOKENS))).join(',')}`,
    },
    { name: 'supply raw', path: `/tokens/${native}/supply/total` },
    { name: 'list page 1, limit 10', path: '/tokens?page=1&limit=10&order=swaps' },
    { name: 'list page 1000, limit 10', path: '/tokens?page=1000&limit=10&order=swaps' },
    { name: 'list default (same URL)', path: '/tokens' },
    { name: 'price sources (random of 10k)', path: (r) => `/tokens/${addr(1 + r(TOKENS))}/price-sources` },
    { name: 'candles (random of 10k)', path: (r) => `/prices/${addr(1 + r(TOKENS))}/candles` },
  ];
}

interface Served {
  plain: string;
  /** A second replica with the per-address rate limit on, set so high that nothing is refused: what the check costs. */
  limited: string;
  bare: string;
  backend: string;
  native: string;
  bytes: number[];
  memory: { rssMb: number; heapMb: number; replicaHeapMb: number; tokens: number; pricePoints: number };
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
  const nativeContract = await new NativeToken__factory(deployer).deploy(
    'Native',
    'NAT',
    await deployer.getAddress(),
    parseEther('1000000000'),
  );
  await nativeContract.waitForDeployment();
  const native = (await nativeContract.getAddress()).toLowerCase();
  const config = {
    host: '127.0.0.1',
    port: 0,
    publicUrl: 'http://127.0.0.1:3000',
    cacheMaxAgeSeconds: 30,
    nativeToken: native,
    excludedWallets: [{ address: addr(0xbeef), label: 'Treasury', status: 'active' }],
    supplyRefreshMs: 60_000,
    rpcUrl: anvil.url,
    indexer: undefined,
  };

  const plain = await startTokenApi({ common, db, schema, config });
  await plain.supply!.refresh();
  const now = Date.now();
  const rows = Array.from({ length: TOKENS }, (_, i) => {
    const priced = i % 10 !== 0;
    const price = priced ? 0.01 + ((i * 7919) % 100_000) / 100 : null;
    const supply = `${1_000_000 + ((i * 104_729) % 1_000_000_000)}.${i % 1000}`;
    const variation = priced ? (((i * 31) % 200) - 100) / 3 : null;
    return {
      address: addr(i + 1),
      name: `Token ${i}`,
      symbol: `T${i}`,
      decimals: 18,
      total_supply_raw: '0',
      total_supply: supply,
      total_supply_num: supply,
      current_price: price,
      price_updated_at: priced ? new Date(now - 60_000) : null,
      last24h_variation: variation,
      last24h_variation_abs: variation === null ? null : Math.abs(variation),
      fdv: price === null ? null : price * Number(supply),
      buys: (i * 13) % 5000,
      sells: (i * 17) % 5000,
      swaps: ((i * 13) % 5000) + ((i * 17) % 5000),
      is_possible_spam: i % 50 === 0,
      is_secure: i % 4 === 0,
      list_logo: i % 3 === 0 ? `https://tokens.example.org/${i}.png` : null,
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
  await seedSourcesAndCandles(db.knex, schema, now);
  await plain.sync();

  // One replica's read model: the heap the second replica's first load adds (after full collections).
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const limited = await startTokenApi({
    common,
    db,
    schema,
    config: { ...config, rateLimit: { perSecond: 1e9, burst: 1e9, trustedProxyHops: 0 } },
  });
  await limited.supply!.refresh();
  gc();
  const mem = process.memoryUsage();
  const rowCount = Number(((await db.knex(`${schema}.prices`).count({ c: '*' })) as { c: string }[])[0]!.c);

  const bare = express();
  bare.disable('x-powered-by');
  bare.set('etag', false);
  const bytes: number[] = [];
  for (const [i, c] of cases(native).entries()) {
    const path = typeof c.path === 'string' ? c.path : c.path(lcg(i + 1));
    const res = await fetch(`${plain.url}${path}`);
    if (res.status !== 200) throw new Error(`${c.name}: ${res.status} ${await res.text()}`);
    const body = Buffer.from(await res.arrayBuffer());
    const type = res.headers.get('content-type')!;
    // The bare handler answers any URL of the case's shape with that one precomputed body.
    bare.get([`/case/${i}`, `/case/${i}/*rest`], (_req, r) => void r.type(type).send(body));
    bytes.push(body.length);
  }
  const bareServer = await listen(bare, '127.0.0.1', 0, 'bare');
  const served: Served = {
    plain: plain.url,
    limited: limited.url,
    bare: bareServer.url,
    backend: db.kind,
    native,
    bytes,
    memory: {
      rssMb: mem.rss / 2 ** 20,
      heapMb: mem.heapUsed / 2 ** 20,
      replicaHeapMb: (mem.heapUsed - heapBefore) / 2 ** 20,
      tokens: TOKENS,
      pricePoints: rowCount,
    },
  };
  process.stdout.write(`${JSON.stringify(served)}\n`);

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

/**
 * What the indexer writes beside each price: an explanation (three pools used, one left out) per priced
 * token and a candle per token and hour, as getTokenPriceSources and getTokenCandles read them.
 */
async function seedSourcesAndCandles(knex: import('knex').Knex, schema: string, now: number): Promise<void> {
  const params = {
    minLiquidityUsd: 1_000,
    outlierShare: 0.2,
    staleAfterSeconds: 604_800,
    referenceLiquidityUsd: 100_000,
  };
  const pool = (k: number, n: number, extra: object) => ({
    pool: addr(0x100000 + k * 4 + n),
    kind: n % 2 ? 'v3' : 'v2',
    quote: addr(0xaaaa),
    route: [addr(0xaaaa), addr(0xbbbb)],
    quotePriceUsd: 3000,
    block: 1_000 + k,
    timeMs: now - 60_000 - n * 3_600_000,
    ...extra,
  });
  for (let i = 0; i < TOKENS; i += 500) {
    const sources = [];
    const candles = [];
    for (let k = i; k < Math.min(i + 500, TOKENS); k++) {
      if (k % 10 === 0) continue; // unpriced, as in the tokens table
      const price = 1 + ((k + 0) % 100) / 10;
      sources.push({
        token: addr(k + 1),
        observed_at: new Date(now - 60_000),
        block_number: 1_000 + k,
        detail: JSON.stringify({
          price,
          basis: 'pools',
          params,
          used: [0.6, 0.3, 0.1].map((weight, n) =>
            pool(k, n, { liquidityUsd: weight * 500_000, spotPrice: price, weight }),
          ),
          excluded: [
            pool(k, 3, {
              liquidityUsd: 40_000,
              spotPrice: price * 3,
              weight: 0,
              reason: 'outlier',
              medianOfOthers: price,
            }),
          ],
        }),
      });
      for (let h = 0; h < 24; h++) {
        const at = now - h * 3_600_000 - 60_000;
        const hourStart = Math.floor(at / 3_600_000) * 3_600_000;
        const close = 1 + ((k + h) % 100) / 10;
        candles.push({
          token: addr(k + 1),
          hour: new Date(hourStart),
          open: close,
          high: close * 1.1,
          low: close * 0.9,
          close,
          volume_usd: 1_000 + k,
          area: close * (at - hourStart),
          covered_from: new Date(hourStart),
          last_at: new Date(at),
        });
      }
    }
    await knex(`${schema}.price_sources`).insert(sources);
    for (let j = 0; j < candles.length; j += 2_000) await knex(`${schema}.candles`).insert(candles.slice(j, j + 2_000));
  }
}

/** CPU seconds (user + system) the process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 Hz)
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  bad: number;
  cpuUsPerReq: number;
}

async function run(
  pid: number,
  base: string,
  c: Case,
  bareIndex: number | undefined,
  seed: number,
  connections = CONNECTIONS,
  duration = DURATION_S,
): Promise<Run> {
  const rand = lcg(seed);
  // The bare server gets the same URL shape under its case prefix, so parsing costs the same.
  const prefix = bareIndex === undefined ? '' : `/case/${bareIndex}`;
  const next = () => {
    if (typeof c.path === 'string') return bareIndex === undefined ? c.path : prefix;
    const p = c.path(rand);
    return bareIndex === undefined ? p : `${prefix}/x${p.replace(/^\/[a-z]+/, '')}`;
  };
  const cpu0 = cpuSeconds(pid);
  // A fixed path is one static request (autocannon builds it once); a path per request costs the generator its
  // setupRequest call each time, which caps it near 16k req/s (below what the bare server answers).
  const request =
    typeof c.path === 'string'
      ? { method: 'GET' as const, path: next() }
      : { method: 'GET' as const, setupRequest: (req: autocannon.Request) => ({ ...req, path: next() }) };
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    autocannon({ url: base, connections, duration, pipelining: 1, requests: [request] }, (err, res) =>
      err ? reject(err) : resolve(res),
    );
  });
  const cpu = cpuSeconds(pid) - cpu0;
  const total = result.requests.total || 1;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    bad: result.non2xx + result.errors + result.timeouts,
    cpuUsPerReq: (cpu / total) * 1e6,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function main(): Promise<void> {
  // BENCH_CPU_PROF=<dir> writes a V8 CPU profile of the server process there (open it in Chrome DevTools).
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(
    process.execPath,
    [...prof, '--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--serve'],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  const served = JSON.parse(line) as Served;
  const pid = child.pid!;
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(
    `${TOKENS} tokens × 24 hourly prices, database ${served.backend}, autocannon ${CONNECTIONS} connections, medians of ${ROUNDS} alternating ${DURATION_S} s runs; load average at start ${load}`,
  );
  const m = served.memory;
  console.log(
    `memory: process RSS ${m.rssMb.toFixed(0)} MB (2 replicas${served.backend === 'pglite' ? ' + the embedded database' : ''}), heap ${m.heapMb.toFixed(0)} MB; ` +
      `one replica's read model (${m.tokens} tokens, ${m.pricePoints} price rows): +${m.replicaHeapMb.toFixed(1)} MB heap`,
  );
  const list = cases(served.native);
  // BENCH_CASES=<text>[|<text>...]: only the cases whose name contains one of them (the 1,000-connection runs are then
  // skipped).
  const only = process.env.BENCH_CASES;
  const rows: string[][] = [];
  for (const [i, c] of list.entries()) {
    if (only && !only.split('|').some((part) => c.name.includes(part))) continue;
    await run(pid, served.plain, c, undefined, 99, CONNECTIONS, 2); // warm-up: JIT, lazy indexes and series
    await run(pid, served.limited, c, undefined, 99, CONNECTIONS, 2);
    // Alternate short runs and take medians: on a shared machine the load drifts between runs.
    const ours: Run[] = [];
    const limitedRuns: Run[] = [];
    const bare: Run[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      ours.push(await run(pid, served.plain, c, undefined, 1_000 + round));
      limitedRuns.push(await run(pid, served.limited, c, undefined, 1_000 + round));
      bare.push(await run(pid, served.bare, c, i, 1_000 + round));
    }
    const bad = [...ours, ...limitedRuns].reduce((n, r) => n + r.bad, 0);
    if (bad > 0) console.log(`warning: ${c.name}: ${bad} non-2xx, failed or timed-out requests`);
    const med = (rs: Run[], k: keyof Run) => median(rs.map((r) => r[k]));
    rows.push([
      c.name,
      String(served.bytes[i]),
      med(ours, 'rps').toFixed(0),
      String(med(ours, 'p50')),
      String(med(ours, 'p99')),
      med(ours, 'cpuUsPerReq').toFixed(0),
      (med(ours, 'rps') / med(bare, 'rps')).toFixed(2),
      med(limitedRuns, 'rps').toFixed(0),
      (med(limitedRuns, 'rps') / med(ours, 'rps')).toFixed(2),
      med(limitedRuns, 'cpuUsPerReq').toFixed(0),
      med(bare, 'rps').toFixed(0),
      String(med(bare, 'p99')),
      med(bare, 'cpuUsPerReq').toFixed(0),
    ]);
  }
  const head = [
    'case',
    'bytes',
    'req/s',
    'p50 ms',
    'p99 ms',
    'cpu µs/req',
    'ratio',
    'limited req/s',
    'limited ÷ plain',
    'limited µs/req',
    'bare req/s',
    'bare p99',
    'bare µs/req',
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]) => r.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  console.log(fmt(head));
  for (const r of rows) console.log(fmt(r));

  // Many clients at once on distinct URLs: one longer run each.
  for (const c of only ? [] : [list[0]!, list[1]!]) {
    const r = await run(pid, served.plain, c, undefined, 7, WIDE_CONNECTIONS, DURATION_S * 2);
    const b = await run(pid, served.bare, c, list.indexOf(c), 7, WIDE_CONNECTIONS, DURATION_S * 2);
    console.log(
      `${WIDE_CONNECTIONS} connections, ${c.name}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms` +
        `${r.bad ? `, ${r.bad} non-2xx/failed` : ''}; bare ${b.rps.toFixed(0)} req/s, p99 ${b.p99} ms; ratio ${(r.rps / b.rps).toFixed(2)}`,
    );
  }
  console.log(`load average at end ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  child.stdin!.end();
  await new Promise((r) => child.once('exit', r));
}

if (process.argv.includes('--serve')) {
  serve().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
