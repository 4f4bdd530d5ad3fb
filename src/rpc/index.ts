import type { DbClient } from '../common/db/client.js';
import { migrate } from '../common/db/migrations.js';
import { listen } from '../common/http/server.js';
import type { Common } from '../cli/context.js';
import { BundlerClient } from './bundler.js';
import type { RpcConfig } from './config.js';
import type { RpcContext } from './context.js';
import { Dispatcher } from './dispatcher.js';
import { FilterStore } from './filters/store.js';
import { METHODS } from './methods/index.js';
import { rpcMigrations } from './migrations.js';
import type { ProofBackend } from './proof.js';
import { memoryRateLimiter, postgresRateLimiter } from './ratelimit.js';
import { createRpcApp } from './server.js';
import { loadRpcSpec } from './spec.js';
import { UpstreamPool } from './upstream/pool.js';

export { loadRpcConfig, rpcEnv, type RpcConfig } from './config.js';
export type { ProofBackend } from './proof.js';
export { rpcMigrations } from './migrations.js';

export interface StartRpcOptions {
  common: Common;
  db: DbClient;
  config: RpcConfig;
  /** The state manager behind svc_getProof; without it the method answers that it is not available. */
  proofBackend?: ProofBackend;
}

export interface RunningRpc {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** Starts the public JSON-RPC endpoint (see README, section "RPC endpoint"). */
export async function startRpc({ common, db, config, proofBackend }: StartRpcOptions): Promise<RunningRpc> {
  const logger = common.logger.child({ module: 'rpc' });
  await db.run((k) => migrate(k, config.dbSchema, rpcMigrations));
  const spec = await loadRpcSpec();

  const upstream = new UpstreamPool({
    urls: config.upstreamUrls,
    timeoutMs: config.upstreamTimeoutMs,
    headPollMs: config.headPollMs,
    maxLagBlocks: config.maxLagBlocks,
    chainId: config.chainId,
    limits: { maxBatchBytes: config.upstreamMaxBatchBytes, maxResponseBytes: config.maxResponseBytes, maxSockets: config.upstreamMaxSockets },
    logger,
    metrics: common.metrics,
  });
  const tracking = new AbortController();
  await upstream.start(tracking.signal);

  const filters = new FilterStore(db, config.dbSchema, config.filterTtlSeconds, config);
  const bundler = config.bundler.url ? new BundlerClient(config.bundler.url, config.bundler.vendorPrefix, config.upstreamTimeoutMs) : undefined;
  const ctx: RpcContext = { config, logger, upstream, filters, bundler, proofBackend };
  const dispatcher = new Dispatcher(spec, METHODS, ctx, common.metrics, logger);

  const limiter =
    config.rateLimit.store === 'postgres' ? postgresRateLimiter(db, config.dbSchema, config.rateLimit) : memoryRateLimiter(config.rateLimit);
  // Expired filters and idle rate-limit buckets: swept in the background, every replica may do it.
  const sweeper = setInterval(() => {
    void filters.sweep().catch((err: unknown) => logger.warn({ err }, 'filter sweep failed'));
    void Promise.resolve(limiter.sweep()).catch((err: unknown) => logger.warn({ err }, 'rate-limit sweep failed'));
  }, Math.min(60_000, config.filterTtlSeconds * 500));
  sweeper.unref();

  const app = createRpcApp({
    dispatcher,
    limiter,
    maxBatch: config.maxBatch,
    maxBodyBytes: config.maxBodyBytes,
    maxResponseBytes: config.maxResponseBytes,
    rateLimitBytesPerUnit: config.rateLimit.bytesPerUnit,
    trustedProxyHops: config.trustedProxyHops,
    maxJsonDepth: config.maxJsonDepth,
    metrics: common.metrics,
    logger,
    readiness: async () => {
      const upstreams = upstream.status();
      let database: string;
      try {
        await db.knex.raw('select 1');
        database = 'ok';
      } catch (err) {
        database = `unreachable: ${(err as Error).message}`;
      }
      return { ready: database === 'ok' && upstreams.some((u) => u.healthy), checks: { database, upstreams } };
    },
  });
  const server = await listen(app, config.host, config.port, 'rpc', { limits: config.http, logger });
  logger.info({ url: server.url, upstreams: upstream.status().map((u) => u.url), methods: METHODS.length }, 'rpc endpoint listening');

  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      await server.close();
      clearInterval(sweeper);
      tracking.abort();
      await upstream.stop();
      bundler?.close();
    })();
    return stopped;
  };
  common.shutdown.add('rpc', stop);
  return { url: server.url, port: server.port, stop };
}
