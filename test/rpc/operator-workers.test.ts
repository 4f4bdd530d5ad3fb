import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Anvil } from '../../src/devnet/anvil.js';
import { databaseKind } from '../helpers/db.js';
import { chain } from './helpers.js';
import { l2stackArgs } from '../helpers/l2stack.js';

/**
 * RPC_OPERATOR_PORT under RPC_WORKERS=2 (`l2stack rpc` itself, PostgreSQL only): the primary serves the
 * operator port for every worker, /metrics carries each worker's series (so their sum is every request
 * the port served) and /health/ready answers for all of them; the public port has none of these routes.
 */
const shared = databaseKind() === 'postgres';
let anvil: Anvil;

beforeAll(async () => {
  if (shared) ({ anvil } = await chain());
}, 120_000);
afterAll(async () => {
  await anvil?.stop();
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

/** One call on its own connection, so the cluster's round-robin spreads them over the workers. */
const freshCall = (url: string) =>
  new Promise<number>((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}');
  });

describe.skipIf(!shared)('operator port with RPC_WORKERS', () => {
  it('behavior: the primary serves /metrics (every worker labelled) and /health/ready for all workers; the public port answers 404 for them', async () => {
    const operatorPort = await freePort();
    const env = {
      PATH: process.env.PATH,
      DATABASE_HOST: process.env.DATABASE_HOST,
      DATABASE_PORT: process.env.DATABASE_PORT,
      DATABASE_USER: process.env.DATABASE_USER,
      DATABASE_PASSWORD: process.env.DATABASE_PASSWORD,
      DATABASE_NAME: process.env.DATABASE_NAME,
      LOG_LEVEL: 'warn',
      RPC_PORT: '0',
      RPC_UPSTREAM_URLS: anvil.url,
      RPC_RATE_LIMIT_PER_SECOND: '0',
      RPC_WORKERS: '2',
      RPC_OPERATOR_PORT: String(operatorPort),
    };
    const child = spawn(process.execPath, l2stackArgs('rpc'), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const urls = await new Promise<{ url: string; operator: string }>((resolve, reject) => {
        child.stdout!.on('data', (d: Buffer) => {
          stdout += d.toString();
          const url = /l2stack rpc listening on (http:\/\/\S+)/.exec(stdout)?.[1];
          const operator = /l2stack rpc operator routes on (http:\/\/\S+)/.exec(stdout)?.[1];
          if (url && operator) resolve({ url, operator });
        });
        void exit.then((code) => reject(new Error(`l2stack rpc exited with ${code}: ${stderr.slice(-800)}`)));
      });
      expect(urls.operator).toBe(`http://127.0.0.1:${operatorPort}`);

      const calls = 20;
      for (let i = 0; i < calls; i++) expect(await freshCall(urls.url)).toBe(200);
      expect((await fetch(`${urls.url}/metrics`)).status).toBe(404);
      expect((await fetch(`${urls.url}/health/ready`)).status).toBe(404);

      const metrics = await (await fetch(`${urls.operator}/metrics`)).text();
      const served = [...metrics.matchAll(/^l2stack_rpc_http_requests_total\{status="200",worker="(\d+)"\} (\d+)$/gm)];
      expect(new Set(served.map((m) => m[1])).size).toBe(2); // both workers, each its own series
      expect(served.reduce((n, m) => n + Number(m[2]), 0)).toBe(calls);

      const ready = await fetch(`${urls.operator}/health/ready`);
      const body = (await ready.json()) as { status: string; checks: { name: string; ok: boolean; detail?: string }[] };
      expect(ready.status, JSON.stringify(body)).toBe(200);
      expect(body.checks.find((c) => c.name === 'workers')).toEqual({
        name: 'workers',
        ok: true,
        detail: '2 of 2 workers answered',
      });
      expect(body.checks.find((c) => c.name === 'upstreams')?.detail).toContain(new URL(anvil.url).host);
    } finally {
      child.kill('SIGTERM');
      expect(await exit).toBe(0);
    }
  }, 120_000);
});
