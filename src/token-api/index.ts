import type { Common } from '../common/kernel.js';
import type { DbClient } from '../common/db/client.js';
import { migrate } from '../common/db/migrations.js';
import { createProvider } from '../common/chain/provider.js';
import { DEFAULT_HTTP_LIMITS } from '../common/config/http-env.js';
import { listen } from '../common/http/server.js';
import { normalizeTokenApiConfig, type TokenApiConfig } from './config.js';
import type { HandlerContext } from './http/context.js';
import { startTokenIndexer, type TokenIndexerHandle } from './indexer/index.js';
import { TOKEN_API_SCHEMA, tokenApiMigrations } from './migrations.js';
import { followReadModel, type ReadModelHandle } from './read-model/follower.js';
import { createReadiness } from './readiness.js';
import { TokenRepository } from './repository.js';
import { createTokenApiApp } from './server.js';
import { SupplyCache, startSupplyJob } from './supply/job.js';

export { loadTokenApiConfig, loadTokenIndexerConfig } from './config.js';
export type { TokenApiConfig } from './config.js';
export { startTokenIndexer } from './indexer/index.js';

export interface TokenApiHandle {
  url: string;
  port: number;
  /** Present when NATIVE_TOKEN_ADDRESS and an RPC URL are configured. */
  supply: { refresh(): Promise<void> } | undefined;
  /** Present when the indexer runs in this process. */
  indexer: TokenIndexerHandle | undefined;
  /** Brings the read model up to every change committed before the call (tests, after writing rows). */
  sync(): Promise<void>;
  stop(): Promise<void>;
}

export interface StartTokenApiOptions {
  common: Common;
  db: DbClient;
  config: TokenApiConfig;
  /** Postgres schema; tests use a unique one per file. */
  schema?: string;
  /** Validate our own responses against the spec (tests): a response that breaks it becomes a 500. */
  validateResponses?: boolean;
}

/**
 * Starts `l2stack token-api`: migrates its schema, starts the supply job and (unless configured off)
 * the indexer, and serves the HTTP API. Everything it starts is registered on common.shutdown.
 */
export async function startTokenApi(options: StartTokenApiOptions): Promise<TokenApiHandle> {
  const { common, db } = options;
  const config = normalizeTokenApiConfig(options.config);
  const schema = options.schema ?? TOKEN_API_SCHEMA;
  const logger = common.logger.child({ module: 'token-api' });
  await db.query('token_api.migrate', (knex) => migrate(knex, schema, tokenApiMigrations));

  // Every answer comes from this replica's memory; the first load completes before the server listens.
  const follower = await followReadModel({
    db,
    schema,
    logger,
    pollMs: config.readModelPollMs ?? 5_000,
    signal: common.shutdown.signal,
  });
  const supplyRefreshSeconds = Math.max(1, Math.floor(config.supplyRefreshMs / 1000));
  const supplyCache = new SupplyCache(
    Math.min(supplyRefreshSeconds, 15),
    Math.min(config.cacheMaxAgeSeconds, supplyRefreshSeconds),
  );
  // Known once the server listens (port 0 picks a free port); closures below read it lazily.
  const bound: { url?: string } = {};
  const ctx: HandlerContext = {
    repo: new TokenRepository(db),
    model: follower.model,
    now: () => Date.now(),
    supply: supplyCache,
    nativeToken: config.nativeToken,
    cacheMaxAgeSeconds: config.cacheMaxAgeSeconds,
    validateResponses: options.validateResponses ?? false,
    logoBase: () => config.publicUrl ?? bound.url ?? `http://${config.host}:${config.port}`,
  };
  // The indexer starts after the server; readiness reads it through this slot.
  const running: { indexer?: TokenIndexerHandle } = {};
  const ready = readinessOf(config, ctx, follower, supplyCache, running);
  const app = createTokenApiApp({
    common,
    ctx,
    publicUrl: () => config.publicUrl ?? bound.url,
    ready,
    rateLimit: config.rateLimit,
  });
  const server = await listen(app, config.host, config.port, 'token-api', {
    limits: config.http ?? DEFAULT_HTTP_LIMITS,
    logger,
  });
  const url = (bound.url = server.url);
  logger.info({ url }, 'token API listening');

  const supply = startNativeSupply(common, config, supplyCache);
  const started = config.indexer ? await startTokenIndexer({ common, db, config: config.indexer, schema }) : undefined;
  const indexer = started && servedAfterWrites(started, follower);
  running.indexer = indexer;

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      await server.close();
      await supply?.stop();
      await indexer?.stop();
      await follower.stop();
    })());
  common.shutdown.add('token-api', stop);
  return { url, port: server.port, supply, indexer, sync: follower.sync, stop };
}

const supplyRuns = (config: TokenApiConfig): config is TokenApiConfig & { rpcUrl: string; nativeToken: string } =>
  config.nativeToken !== undefined && config.rpcUrl !== undefined;

function readinessOf(
  config: TokenApiConfig,
  ctx: HandlerContext,
  follower: ReadModelHandle,
  supplyCache: SupplyCache,
  running: { indexer?: TokenIndexerHandle },
) {
  return createReadiness({
    pingDatabase: () => ctx.repo.ping(),
    rpcUrl: config.indexer?.rpcUrl ?? config.rpcUrl,
    timeoutMs: config.readiness?.timeoutMs ?? 3_000,
    maxStallMs: config.readiness?.maxStallMs ?? 120_000,
    indexer: config.indexer
      ? () => running.indexer?.health() ?? { state: 'starting', lastProgressAt: undefined }
      : undefined,
    readModel: follower.health,
    supply: supplyRuns(config)
      ? { lastUpdatedAt: () => supplyCache.snapshot?.lastUpdated.getTime(), intervalMs: config.supplyRefreshMs }
      : undefined,
  });
}

/** The native token's supply job, when the token and a node are configured. */
function startNativeSupply(
  common: Common,
  config: TokenApiConfig,
  supplyCache: SupplyCache,
): ReturnType<typeof startSupplyJob> | undefined {
  if (!supplyRuns(config)) return undefined;
  return startSupplyJob({
    common,
    provider: createProvider(config.rpcUrl),
    token: config.nativeToken,
    wallets: config.excludedWallets,
    intervalMs: config.supplyRefreshMs,
    cache: supplyCache,
  });
}

/** The in-process indexer whose operations resolve once this replica serves what they wrote. */
function servedAfterWrites(started: TokenIndexerHandle, follower: ReadModelHandle): TokenIndexerHandle {
  return {
    ...started,
    syncToHead: async () => {
      const cursor = await started.syncToHead();
      await follower.sync();
      return cursor;
    },
    refreshTokenList: () => started.refreshTokenList().then(follower.sync),
    refreshSupplies: (all) => started.refreshSupplies(all).then(follower.sync),
  };
}
