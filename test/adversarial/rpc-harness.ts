import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/common/log.js';
import { createMetrics } from '../../src/common/metrics.js';
import { Shutdown } from '../../src/common/shutdown.js';
import { loadRpcConfig, startRpc, type RpcConfig } from '../../src/rpc/index.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { openTestDb } from '../helpers/db.js';
import type { ethers } from 'ethers';
import { chain, post, wallet, type RpcReply } from '../rpc/helpers.js';
import { startCanary, type Canary } from './canary.js';
import { transportFromEnv } from '../helpers/transport.js';

/** One pino line as the endpoint wrote it. */
export interface LogLine {
  level: number;
  msg: string;
  err?: { message?: string; stack?: string };
}

export interface RpcUnderTest {
  url: string;
  config: RpcConfig;
  /** Everything the endpoint logged (level info and above). */
  logs: LogLine[];
  stop(): Promise<void>;
}

/**
 * The endpoint as in production (real sockets, real anvil upstream, the test database), but with its
 * log captured so a test can prove that an attack left no error or stack trace behind.
 */
export async function startRpcUnderTest(options: {
  db: Awaited<ReturnType<typeof openTestDb>>;
  schema: string;
  anvil: Anvil;
  env?: Record<string, string>;
}): Promise<RpcUnderTest> {
  const logs: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) logs.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const logger = createLogger({ level: 'info', destination: sink });
  const common = { logger, metrics: createMetrics({ defaultMetrics: false }), shutdown: new Shutdown(logger) };
  const config = loadRpcConfig(
    {
      RPC_PORT: '0',
      RPC_UPSTREAM_URLS: options.anvil.url,
      RPC_RATE_LIMIT_PER_SECOND: '0',
      RPC_UPSTREAM_HEAD_POLL_MS: '100',
      ...transportFromEnv(),
      ...options.env,
    },
    { dbSchema: options.schema },
  );
  const running = await startRpc({ common, db: options.db.client, config });
  return { url: running.url, config, logs, stop: () => common.shutdown.run('test done') };
}

/** A normal client polling eth_blockNumber while a recipe runs: every answer must be a block number. */
export function blockNumberCanary(name: string, url: string): Canary {
  return startCanary(name, {
    method: 'POST',
    url,
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
    ok: (status, body) =>
      status === 200 && /^0x[0-9a-f]+$/.test(String((JSON.parse(body) as { result?: unknown }).result)),
  });
}

/**
 * A normal client whose every request reaches the node: a batch of eth_blockNumber (answered from the head
 * tracker) and eth_getBalance of a fresh random address at latest (no cache holds it), so a node that still
 * answers heads but no longer serves state reads fails the canary.
 */
export function nodeCanary(
  name: string,
  url: string,
  options: { headers?: Record<string, string>; localAddress?: string } = {},
): Canary {
  return startCanary(
    name,
    {
      method: 'POST',
      url,
      headers: options.headers,
      localAddress: options.localAddress,
      body: () =>
        `[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]},{"jsonrpc":"2.0","id":2,"method":"eth_getBalance","params":["0x${randomBytes(20).toString('hex')}","latest"]}]`,
      ok: (status, body) => {
        if (status !== 200) return false;
        const answers = JSON.parse(body) as { id: number; result?: unknown }[];
        return (
          Array.isArray(answers) &&
          answers.length === 2 &&
          answers.every((a) => typeof a.result === 'string' && /^0x[0-9a-f]+$/.test(a.result))
        );
      },
    },
    { timeoutMs: 10_000 },
  );
}

export { chain, openTestDb };

/** Resident set size of this process (endpoint and, without DATABASE_HOST, its embedded PGlite) in MiB. */
export const rssMiB = () => Math.round(process.memoryUsage().rss / 1048576);

/**
 * A transfer from wallet(1) to wallet(2), signed here (nonce and fees from `provider`, the node) and sent through the
 * endpoint at `url` as the client `from` (X-Forwarded-For): its hash. What a normal user does in the middle of an
 * attack; the recipe then waits for its receipt.
 */
export async function sendTransfer(url: string, provider: ethers.JsonRpcProvider, from: string): Promise<string> {
  const signer = wallet(1, provider);
  const raw = await signer.signTransaction(await signer.populateTransaction({ to: wallet(2).address, value: 1n }));
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raw] });
  const reply = JSON.parse((await post(url, body, { 'x-forwarded-for': from })).text) as RpcReply;
  if (reply.error) throw new Error(`eth_sendRawTransaction through the endpoint: ${JSON.stringify(reply.error)}`);
  return reply.result as string;
}
