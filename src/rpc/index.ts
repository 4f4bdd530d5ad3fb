import type { DbClient } from '../common/db/client.js';
import { migrate } from '../common/db/migrations.js';
import { operatorListener, type Check } from '../common/http/operator.js';
import { listen } from '../common/http/server.js';
import type { Common } from '../common/kernel.js';
import type { Logger } from '../common/log.js';
import { counter, type Registry } from '../common/metrics.js';
import { BundlerClient } from './upstream/bundler-client.js';
import type { RpcConfig } from './config.js';
import type { RpcContext } from './context.js';
import { Dispatcher } from './dispatcher.js';
import { FilterStore } from './filters/store.js';
import { joinMemo } from './filters/memo.js';
import { closePendingWatch } from './filters/pending.js';
import { METHODS } from './methods/index.js';
import { rpcMigrations } from './migrations.js';
import type { ProofBackend } from './proof.js';
import {
  ClientSlots,
  memoryRateLimiter,
  postgresRateLimiter,
  type RateLimiter,
  type RateLimitSettings,
} from './ratelimit.js';
import { stateReadiness } from './node-readiness.js';
import { transportCore } from './transport/core.js';
import type { ReadinessView, RpcAppOptions } from './transport/routes.js';
import { createRpcApp } from './transport/node/http.js';
import { attachWebSocket } from './transport/node/ws.js';
import { listenUws } from './transport/uws/http.js';
import { chooseTransport, type Transport, type TransportChoice } from './transport/uws/load.js';
import { attachUwsWebSocket } from './transport/uws/ws.js';
import { DEFAULT_HTTP_LIMITS } from '../common/config/http-env.js';
import { ClientQuota } from '../common/http/client-quota.js';
import { loadRpcSpec } from './spec.js';
import { UpstreamPool } from './upstream/pool.js';
import { AnswerCache } from './cache/answer-cache.js';
import { startWebSocket, type StartWebSocketOptions } from './ws/index.js';
import { KeyAccess } from './keys/access.js';
import { KeyFailureLimiter } from './keys/failures.js';
import { KeyRegistry } from './keys/registry.js';
import { ApiKeyStore } from './keys/store.js';
import { checkWorkers, forkWorkers, isClusterWorker, reportWorkerListening } from './workers.js';

export { loadRpcConfig, rpcEnv, type RpcConfig } from './config.js';
export { checkWorkersConfig, isClusterWorker } from './workers.js';
export type { ProofBackend } from './proof.js';
export { rpcMigrations } from './migrations.js';

export interface StartRpcOptions {
  common: Common;
  db: DbClient;
  config: RpcConfig;
  /** The state manager behind svc_getProof; without it the method answers that it is not available. */
  proofBackend?: ProofBackend;
  /**
   * Whether this process may fork RPC_WORKERS workers (node:cluster re-runs this process's command line,
   * so only `l2stack rpc` says yes; an endpoint embedded elsewhere, e.g. under `l2stack dev`, serves alone).
   */
  workers?: boolean;
}

export interface RunningRpc {
  url: string;
  port: number;
  /** Where /metrics and /health/* are served when RPC_OPERATOR_PORT is set (else on `url`). */
  operatorUrl?: string;
  /** The public port's stack, RPC_TRANSPORT resolved (`auto`: uws where its build loads). */
  transport: Transport;
  stop(): Promise<void>;
}

/** The per-client quotas of node work in flight (traces, wide eth_getLogs), each refusal counted by its variable. */
function nodeQuotas(config: RpcConfig, metrics: Registry): RpcContext['quotas'] {
  const refusals = counter(
    metrics,
    'l2stack_rpc_node_quota_refusals_total',
    'Calls refused by a per-client quota of node work in flight, by its variable',
    ['variable'],
  );
  const slots = (perClient: number, variable: string) =>
    new ClientSlots(perClient, config.evm.timeoutMs, () => refusals.inc({ variable }));
  return {
    traces: slots(config.traceMaxPerClient, 'RPC_TRACE_MAX_PER_CLIENT'),
    wideLogs: slots(config.logs.wideMaxPerClient, 'RPC_LOGS_WIDE_MAX_PER_CLIENT'),
  };
}

/** Starts the public JSON-RPC endpoint (see docs/rpc.md). */
export async function startRpc({ common, db, config, proofBackend, workers }: StartRpcOptions): Promise<RunningRpc> {
  const logger = common.logger.child({ module: 'rpc' });
  const clustered = workers === true && config.workers > 1;
  if (clustered) checkWorkers(config, db);
  else if (config.workers > 1)
    logger.warn(
      { workers: config.workers },
      'RPC_WORKERS applies to `l2stack rpc` only: this endpoint serves from one process',
    );
  const transport = chooseTransport(config.transport, clustered ? config.workers : 1); // before anything opens
  await db.query('rpc.migrate', (k) => migrate(k, config.dbSchema, rpcMigrations));
  if (clustered && !isClusterWorker()) {
    // The primary only hands connections to its workers (each a whole endpoint on node:http, see workers.ts).
    const running = await forkWorkers(config.workers, logger, common.shutdown, {
      operator: config.operator,
      limits: config.http,
    });
    return { ...running, transport: 'node' };
  }
  const { dispatcher, upstream, filters, close } = await startDispatcher(common, db, config, logger, proofBackend);
  const { limiter, keyLimiters, access, inflight } = createAccess(db, config, common.metrics);
  const sweeper = startSweeper(filters, () => [limiter, ...keyLimiters], config, logger);

  const readiness = readinessOf(db, upstream, config);
  const { metrics } = common;
  const parts = { dispatcher, limiter, inflight, access, readiness, metrics, logger };
  const { server, ws } = await listenPublic(config, transport, parts, upstream);
  // RPC_OPERATOR_PORT: /metrics and /health/* with full detail on their own listener (in a cluster the primary's,
  // workers.ts).
  const operator =
    config.operator && !clustered
      ? await listen(
          operatorListener({ metrics, readiness: () => readiness('operator') }),
          config.operator.host,
          config.operator.port,
          'rpc operator',
          { limits: config.http, logger },
        )
      : undefined;
  logger.info(
    {
      url: server.url,
      transport: transport.transport,
      operatorUrl: operator?.url,
      upstreams: upstream.status().map((u) => u.url),
      methods: METHODS.length,
    },
    'rpc endpoint listening',
  );

  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      await ws?.stop();
      await Promise.all([server.close(), operator?.close()]);
      clearInterval(sweeper);
      await close();
    })();
    return stopped;
  };
  common.shutdown.add('rpc', stop);
  if (clustered) reportWorkerListening(server.url, stop, config.operator ? { metrics, readiness } : undefined);
  return { url: server.url, port: server.port, operatorUrl: operator?.url, transport: transport.transport, stop };
}

/**
 * The dispatcher and what its methods stand on: the nodes (their head tracked from here on), the answer cache,
 * the filters and the bundler; `close` lets go of them once nothing reaches the dispatcher any more.
 */
async function startDispatcher(
  common: Common,
  db: DbClient,
  config: RpcConfig,
  logger: Logger,
  proofBackend: ProofBackend | undefined,
) {
  const spec = await loadRpcSpec();
  const upstream = createUpstreamPool(config, logger, common.metrics);
  const cache = new AnswerCache(config.cacheBytes, common.metrics);
  // Answers true only at the previous head go with every move of it (new block or reorg).
  upstream.tracker.subscribe(() => cache.headMoved());
  const tracking = new AbortController();
  await upstream.start(tracking.signal);

  const filters = new FilterStore(db, config.dbSchema, config);
  // Uninstalls made by other processes reach this one's memo of filters (PostgreSQL LISTEN).
  const leaveMemo = joinMemo(db, `${config.dbSchema}.filters`, filters.memo, logger);
  const bundler = config.bundler.url
    ? new BundlerClient(config.bundler.url, config.bundler.vendorPrefix, config.upstreamTimeoutMs)
    : undefined;
  const quotas = nodeQuotas(config, common.metrics);
  const ctx: RpcContext = { config, logger, upstream, filters, bundler, proofBackend, cache, quotas };
  const dispatcher = new Dispatcher(spec, METHODS, ctx, common.metrics, logger);
  const close = async () => {
    closePendingWatch(filters);
    tracking.abort();
    await upstream.stop();
    await leaveMemo();
    bundler?.close();
  };
  return { dispatcher, upstream, filters, close };
}

type PublicServer = { url: string; port: number; close(): Promise<void> };
type Sockets = { stop(): Promise<void> } | undefined;
type AppParts = Pick<
  RpcAppOptions,
  'dispatcher' | 'limiter' | 'inflight' | 'access' | 'readiness' | 'metrics' | 'logger'
>;

/**
 * The public port on the chosen stack (node:http, or uWebSockets.js), its WebSocket side attached to it; says
 * which and why. POST bodies and WebSocket messages are answered by one core, whichever stack carries them.
 */
async function listenPublic(
  config: RpcConfig,
  { transport, why }: TransportChoice,
  parts: AppParts,
  upstream: UpstreamPool,
): Promise<{ server: PublicServer; ws: Sockets }> {
  const app: RpcAppOptions = {
    ...parts,
    maxBatch: config.maxBatch,
    maxBodyBytes: config.maxBodyBytes,
    maxResponseBytes: config.maxResponseBytes,
    replyCosts: config.rateLimit,
    trustedProxyHops: config.trustedProxyHops,
    maxJsonDepth: config.maxJsonDepth,
    corsOrigins: config.corsOrigins,
    operatorRoutes: config.operator === undefined,
  };
  const core = transportCore(app);
  // JSON-RPC over WebSocket on the same port, subscriptions fed by the pool's head (RPC_WS_MAX_SOCKETS=0: off).
  const sockets = (attach: StartWebSocketOptions['attach']): Sockets =>
    config.ws.maxSockets > 0
      ? startWebSocket({
          attach,
          config,
          core,
          feed: upstream.tracker,
          upstream: (method, params) => upstream.request(method, params),
          metrics: app.metrics,
          logger: app.logger,
        })
      : undefined;
  app.logger.info({ transport, why }, `rpc transport: ${transport === 'uws' ? 'uWebSockets.js' : 'node:http'}`);
  if (transport === 'uws') {
    let ws: Sockets;
    const server = await listenUws(
      app,
      core,
      config.host,
      config.port,
      config.http ?? DEFAULT_HTTP_LIMITS,
      (uwsApp, connections) => {
        ws = sockets((o) => attachUwsWebSocket(uwsApp, o, connections));
      },
    );
    return { server, ws };
  }
  const server = await listen(createRpcApp(app, core), config.host, config.port, 'rpc', {
    limits: config.http,
    logger: app.logger,
  });
  return { server, ws: sockets((o) => attachWebSocket(server.server, o)) };
}

function createUpstreamPool(config: RpcConfig, logger: Logger, metrics: Registry): UpstreamPool {
  return new UpstreamPool({
    urls: config.upstreamUrls,
    timeoutMs: config.upstreamTimeoutMs,
    headPollMs: config.headPollMs,
    maxLagBlocks: config.maxLagBlocks,
    chainId: config.chainId,
    limits: {
      maxBatchBytes: config.upstreamMaxBatchBytes,
      maxResponseBytes: config.maxResponseBytes,
      maxSockets: config.upstreamMaxSockets,
    },
    wsUrls: config.headSource === 'poll' ? [] : config.upstreamWsUrls.length > 0 ? config.upstreamWsUrls : undefined,
    headDepth: config.headDepth,
    compute: config.evm,
    logger,
    metrics,
  });
}

/**
 * The public rate limiter and API-key access: a key's own bucket (shared by replicas like the public ones) and
 * allow-list (keys/); and one count of each client's calls in flight, over HTTP and WebSocket alike.
 */
function createAccess(db: DbClient, config: RpcConfig, metrics: Registry) {
  const limiterFor = (settings: RateLimitSettings) =>
    config.rateLimit.store === 'postgres'
      ? postgresRateLimiter(db, config.dbSchema, settings)
      : memoryRateLimiter(settings);
  const limiter = limiterFor(config.rateLimit);
  const keyLimiters: (RateLimiter & { sweep(): unknown })[] = [];
  const access = new KeyAccess(
    new KeyRegistry(new ApiKeyStore(db, config.dbSchema), { metrics }),
    limiter,
    config.rateLimit,
    (settings) => {
      const made = limiterFor(settings);
      keyLimiters.push(made);
      return made;
    },
    new KeyFailureLimiter({ perMinute: config.keyFailuresPerMinute }),
  );
  return { limiter, keyLimiters, access, inflight: new ClientQuota(config.maxInflightPerClient) };
}

/**
 * The database, the pool (one healthy upstream is enough: reads fail over; the detail names each) and the
 * node's state (a stuck node still has a head: node-readiness.ts). The public view never names a host:
 * upstreams are numbered, driver messages (which carry host:port) left out.
 */
function readinessOf(
  db: DbClient,
  upstream: UpstreamPool,
  config: RpcConfig,
): (view: ReadinessView) => Promise<Check[]> {
  const nodeState = stateReadiness(upstream, config.upstreamTimeoutMs);
  return async (view) => {
    const database: Check = await db
      .query('rpc.ready_probe', (k) => k.raw('select 1'), { retries: 0 })
      .then(
        () => ({ name: 'database', ok: true }),
        (err: Error) => ({
          name: 'database',
          ok: false,
          detail: view === 'operator' ? `unreachable: ${err.message}` : 'unreachable',
        }),
      );
    const upstreams = upstream.status();
    const detail = upstreams
      .map((u, i) => {
        const state = u.healthy
          ? `healthy at head ${u.head ?? '?'}`
          : view === 'operator'
            ? `down: ${u.lastError ?? 'no head yet'}`
            : 'down';
        return view === 'operator' ? `${u.id} ${u.url} ${state}` : `upstream ${i + 1} ${state}`;
      })
      .join('; ');
    return [database, { name: 'upstreams', ok: upstreams.some((u) => u.healthy), detail }, await nodeState()];
  };
}

/**
 * Expired filters and idle rate-limit buckets (asked each time: key limiters are made on first use),
 * swept in the background; every replica may do it.
 */
function startSweeper(
  filters: FilterStore,
  limiters: () => readonly (RateLimiter & { sweep(): unknown })[],
  config: RpcConfig,
  logger: Logger,
): NodeJS.Timeout {
  const sweeper = setInterval(
    () => {
      void filters.sweep().catch((err: unknown) => logger.warn({ err }, 'filter sweep failed'));
      for (const l of limiters())
        void Promise.resolve(l.sweep()).catch((err: unknown) => logger.warn({ err }, 'rate-limit sweep failed'));
    },
    Math.min(60_000, config.filterTtlSeconds * 500),
  );
  sweeper.unref();
  return sweeper;
}
