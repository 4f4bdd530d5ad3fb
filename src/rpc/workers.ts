import cluster, { type Worker } from 'node:cluster';
import { ConfigError } from '../common/config/env.js';
import { loadDatabaseConfig, type DatabaseConfig } from '../common/db/config.js';
import type { DbClient } from '../common/db/client.js';
import type { Logger } from '../common/log.js';
import type { HttpLimits } from '../common/config/http-env.js';
import { listen, type RunningServer } from '../common/http/server.js';
import { answerOperatorAsks, clusterOperatorListener } from './cluster-operator.js';
import type { RpcConfig } from './config.js';

/**
 * RPC_WORKERS > 1: several processes serve the one port (node:cluster; the primary accepts connections
 * and hands them round-robin to its workers, so one Node event loop no longer bounds the endpoint).
 * Each worker is a whole endpoint (head tracker, answer cache, filter memo); what must be shared already
 * lives in PostgreSQL, as between replicas: filters are claimed there with a compare-and-set (exactly
 * once across processes) and uninstalls reach every memo by LISTEN/NOTIFY. PGlite is one process's
 * embedded database, and an in-memory rate limit would count per worker (N times the limit): both are
 * refused rather than served wrong.
 */
export function checkWorkers(config: RpcConfig, db: Pick<DbClient | DatabaseConfig, 'kind'>): void {
  if (config.workers <= 1) return;
  const problems: string[] = [];
  if (config.transport === 'uws')
    problems.push(
      `RPC_WORKERS=${config.workers} needs RPC_TRANSPORT=node: workers share one port through node:cluster, which uWebSockets.js's sockets do not use; run one uws process per core behind a balancer instead`,
    );
  if (db.kind === 'pglite')
    problems.push(
      `RPC_WORKERS=${config.workers} needs PostgreSQL (DATABASE_HOST): PGlite is embedded in one process and cannot be shared by workers; use RPC_WORKERS=1`,
    );
  if (config.rateLimit.perSecond > 0 && config.rateLimit.store !== 'postgres') {
    problems.push(
      `RPC_WORKERS=${config.workers} with RPC_RATE_LIMIT_PER_SECOND=${config.rateLimit.perSecond} needs RPC_RATE_LIMIT_STORE=postgres: a memory bucket per worker would allow ${config.workers} times the limit`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
}

/**
 * checkWorkers at config time (`l2stack rpc`): the database kind comes from the DATABASE_* variables, so
 * RPC_WORKERS is refused before anything opens (PGlite took 15–30 s to open under load before it was).
 * Problems in DATABASE_* themselves are the common config's to report, not repeated here.
 */
export function checkWorkersConfig(config: RpcConfig, env: Record<string, string | undefined>): void {
  if (config.workers <= 1) return;
  let db: DatabaseConfig;
  try {
    db = loadDatabaseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return;
    throw err;
  }
  checkWorkers(config, db);
}

/** The message a worker sends its primary once it listens. */
interface Listening {
  l2stackRpcListening: string;
}
const isListening = (m: unknown): m is Listening =>
  typeof m === 'object' && m !== null && typeof (m as Listening).l2stackRpcListening === 'string';

/**
 * In a worker: tells the primary where it listens, and ends cleanly when the primary goes away. With an
 * operator port (`operator`), answers the primary's /metrics and /health/ready questions (cluster-operator.ts).
 */
export function reportWorkerListening(
  url: string,
  stop: () => Promise<void>,
  operator?: Parameters<typeof answerOperatorAsks>[0],
): void {
  if (operator) answerOperatorAsks(operator);
  process.send?.({ l2stackRpcListening: url } satisfies Listening);
  // The primary died or let go of us: finish what is in flight and leave (no orphan holding the port).
  process.once('disconnect', () => {
    void stop().finally(() => process.exit(0));
  });
}

export interface RunningWorkers {
  url: string;
  port: number;
  /** RPC_OPERATOR_PORT's listener, served by the primary for all workers. */
  operatorUrl?: string;
  stop(): Promise<void>;
}

export interface PrimaryOptions {
  operator?: { host: string; port: number };
  limits?: HttpLimits;
}

/**
 * In the primary: forks `count` workers (the same command line, so each runs `l2stack rpc` as a worker),
 * resolves once all listen, and replaces a worker that dies until stopped.
 */
export async function forkWorkers(
  count: number,
  logger: Logger,
  options: PrimaryOptions = {},
): Promise<RunningWorkers> {
  let stopping = false;
  const live = new Set<Worker>();
  const fork = () => {
    const worker = cluster.fork();
    live.add(worker);
    worker.once('exit', (code, signal) => {
      live.delete(worker);
      if (stopping) return;
      logger.error({ pid: worker.process.pid, code, signal }, 'rpc worker exited; starting another');
      fork();
    });
    return worker;
  };
  const stopAll = async () => {
    stopping = true;
    await Promise.all(
      [...live].map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) return resolve();
            w.once('exit', () => resolve());
            w.process.kill('SIGTERM');
          }),
      ),
    );
  };
  const started = new Promise<string>((resolve, reject) => {
    let listening = 0;
    let url: string | undefined;
    for (let i = 0; i < count; i++) {
      const worker = fork();
      const onMessage = (m: unknown) => {
        if (!isListening(m)) return;
        worker.off('message', onMessage);
        url ??= m.l2stackRpcListening;
        if (++listening === count) resolve(url);
      };
      worker.on('message', onMessage);
      worker.once('exit', (code) => {
        if (listening < count && !stopping)
          reject(new Error(`rpc worker ${worker.process.pid} exited with ${code} before it listened`));
      });
    }
  });
  let first: string;
  try {
    first = await started;
  } catch (err) {
    // A worker that cannot start would be replaced forever: stop them all and say why.
    await stopAll();
    throw err;
  }
  let operator: RunningServer | undefined;
  if (options.operator) {
    try {
      operator = await listen(
        clusterOperatorListener(() => live, count),
        options.operator.host,
        options.operator.port,
        'rpc operator',
        { limits: options.limits, logger },
      );
    } catch (err) {
      await stopAll();
      throw err;
    }
  }
  logger.info({ url: first, operatorUrl: operator?.url, workers: count }, 'rpc workers listening');
  const stop = async () => {
    await Promise.all([stopAll(), operator?.close()]);
  };
  return { url: first, port: Number(new URL(first).port), operatorUrl: operator?.url, stop };
}

export const isClusterWorker = () => cluster.isWorker;
