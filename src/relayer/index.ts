import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Common } from '../common/kernel.js';
import type { DbClient } from '../common/db/client.js';
import { migrate } from '../common/db/migrations.js';
import { listen, type RunningServer } from '../common/http/server.js';
import type { Logger } from '../common/log.js';
import { deferredApi } from './api/deferred.js';
import type { Chain } from './chain.js';
import { DIRECTIONS, type Direction, type RelayerConfig } from './config.js';
import { RELAYER_SCHEMA, relayerMigrations } from './db/migrations.js';
import { RelayerRepository } from './db/repository.js';
import { createRelayerMetrics, registerReadinessGauge } from './metrics.js';
import { directionPrefix } from './pipeline/context.js';
import { bootDirections } from './boot.js';
import { relayerLoop, type RelayerRun } from './direction.js';
import { relayerReadiness } from './readiness.js';

export { loadRelayerConfig, type RelayerConfig } from './config.js';
export { RELAYER_SCHEMA, relayerMigrations } from './db/migrations.js';
export { STANDING_BY } from './direction.js';

/** The longest the API's build waits for the start's first round (./api/deferred.ts). */
const API_BUILD_MAX_WAIT_MS = 3_000;

export interface Relayer {
  url: string;
  schema: string;
  /** This instance as the actor of its history lines: `relayer <host>:<pid>:<random>` (two in one process differ). */
  instance: string;
  /**
   * Settles when the relayer cannot go on at all (its database is pinned to other chains; logged once as an
   * error): the command stops everything and exits 1. Loops never end up here; they retry.
   */
  fatal: Promise<Error>;
  stop(): Promise<void>;
}

export interface StartRelayerOptions {
  common: Common;
  db: DbClient;
  config: RelayerConfig;
  /** Postgres schema of the relayer's tables (tests use one per file); default "relayer". */
  schema?: string;
  /** Check our own API responses against the spec (tests). */
  validateResponses?: boolean;
}

/**
 * Starts the relayer: migrations, the HTTP API, then in the background (so the API answers, and
 * readiness explains, while chains are unreachable) the pipeline of each enabled direction, each under
 * its own leadership lock so a second instance on the same database stands by.
 */
export async function startRelayer({
  common,
  db,
  config,
  schema = RELAYER_SCHEMA,
  validateResponses,
}: StartRelayerOptions): Promise<Relayer> {
  const logger = common.logger.child({ module: 'relayer' });
  await db.query('relayer.migrate', (knex) => migrate(knex, schema, relayerMigrations));
  const instance = `relayer ${hostname()}:${process.pid}:${randomBytes(2).toString('hex')}`;
  const repo = new RelayerRepository(db, schema, instance);
  const metrics = createRelayerMetrics(common.metrics, repo, config.operations);
  const controller = new AbortController();
  const enabled = enabledDirections(config, logger);
  const run: RelayerRun = {
    config,
    db,
    schema,
    repo,
    metrics,
    logger,
    enabled,
    funds: {},
    signal: AbortSignal.any([controller.signal, common.shutdown.signal]),
    health: Object.fromEntries(
      enabled.map((d) => [d, { lastProgressAt: undefined, lastBlock: undefined, state: 'starting' }]),
    ),
  };
  const chains: { l1?: Chain; l2?: Chain } = {};
  let fail: (err: Error) => void = () => {};
  const fatal = new Promise<Error>((resolve) => (fail = resolve));
  const tasks = [bootDirections(run, { registry: common.metrics, chains, fail })];
  if (config.cleaner.enabled) tasks.push(runCleaner(run));

  const api = relayerApi(run, common.metrics, fail, validateResponses);
  let server: RunningServer;
  try {
    server = await listen(api.listener, config.api.host, config.api.port, 'relayer API', {
      limits: config.api.http,
      logger,
    });
  } catch (err) {
    api.cancel();
    controller.abort();
    await Promise.allSettled(tasks);
    throw err;
  }
  logger.info({ url: server.url, directions: enabled, schema }, 'relayer started');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      controller.abort();
      api.cancel();
      await server.close();
      await Promise.allSettled(tasks);
      chains.l1?.provider.destroy();
      chains.l2?.provider.destroy();
      logger.info('relayer stopped');
    })());
  common.shutdown.add('relayer', stop);
  return { url: server.url, schema, instance, stop, fatal };
}

/**
 * The relayer API, built once the start's first round is out (./api/deferred.ts): its ~0.75 s of CPU would
 * otherwise run before the first claim, on the same thread.
 */
function relayerApi(run: RelayerRun, registry: Common['metrics'], fail: (err: Error) => void, validate?: boolean) {
  const readiness = relayerReadiness(run);
  registerReadinessGauge(registry, readiness);
  return deferredApi({
    maxWaitMs: API_BUILD_MAX_WAIT_MS,
    build: async () => {
      const { createRelayerApp } = await import('./api/app.js');
      return createRelayerApp({ repo: run.repo, db: run.db, registry, readiness }, run.logger, {
        validateResponses: validate,
        rateLimit: run.config.api.rateLimit,
        admin: { token: run.config.api.adminToken },
      });
    },
    failed: (err) => {
      run.logger.error({ err }, 'the relayer API could not be built');
      fail(err);
    },
  });
}

/** The directions whose auto-claim is on; a warning for each that would exclude every message, and when none is on. */
function enabledDirections(config: RelayerConfig, logger: Logger): Direction[] {
  const switches = (d: Direction) => (d === 'L1_TO_L2' ? config.l1ToL2 : config.l2ToL1);
  const enabled = DIRECTIONS.filter((d) => switches(d).autoClaimEnabled);
  for (const d of enabled) {
    const dc = switches(d);
    if (!dc.eoaEnabled && !dc.calldataEnabled) {
      logger.warn(
        { direction: d },
        `${directionPrefix(d)}_EOA_ENABLED and _CALLDATA_ENABLED are both false: every message of this direction will be EXCLUDED`,
      );
    }
  }
  if (enabled.length === 0)
    logger.warn('L1_L2_AUTO_CLAIM_ENABLED and L2_L1_AUTO_CLAIM_ENABLED are both false: no direction is relayed');
  return enabled;
}

/** The cleaner: messages in final statuses older than DB_DAYS_BEFORE_NOW_TO_DELETE (with their history) removed. */
function runCleaner(run: RelayerRun): Promise<void> {
  const { cleaner } = run.config;
  return relayerLoop(run, 'cleaner', cleaner.intervalMs, async () => {
    const deleted = await run.repo.deleteFinalOlderThan(cleaner.daysBeforeNowToDelete);
    if (deleted > 0) run.logger.info({ deleted }, 'old messages in final statuses deleted');
    return false;
  });
}
