import cluster, { type Worker } from 'node:cluster';
import { ConfigError } from '../common/config/env.js';
import { loadDatabaseConfig, type DatabaseConfig } from '../common/db/config.js';
import type { DbClient } from '../common/db/client.js';
import type { Logger } from '../common/log.js';
import type { HttpLimits } from '../common/config/http-env.js';
import { listen, type RunningServer } from '../common/http/server.js';
import type { Shutdown } from '../common/shutdown.js';
import { answerOperatorAsks, clusterOperatorListener } from './cluster-operator.js';
import type { RpcConfig } from './config.js';

/**
 * RPC_WORKERS > 1: several processes serve the one port (node:cluster; the primary accepts connections and hands them
 * round-robin to its workers, so one Node event loop no longer bounds the endpoint). Each worker is a whole endpoint
 * (head tracker, answer cache, filter memo); what must be shared already lives in PostgreSQL, as between replicas:
 * filters are claimed there with a compare-and-set (exactly once across processes) and uninstalls reach every memo by
 * LISTEN/NOTIFY. PGlite is one process's embedded database, and an in-memory rate limit would count per worker (N times
 * the limit): both are refused rather than served wrong.
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
 * checkWorkers at config time (`l2stack rpc`): the database kind comes from the DATABASE_* variables, so RPC_WORKERS is
 * refused before anything opens (PGlite took 15–30 s to open under load before it was). Problems in DATABASE_*
 * themselves are the common config's to report, not repeated here.
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
 * In a worker: tells the primary where it listens, and ends cleanly when the primary goes away. With an operator port
 * (`operator`), answers the primary's /metrics and /health/ready questions (cluster-operator.ts).
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

/** The primary's workers: each one that dies is replaced until `stopAll` (SIGTERM to each, waiting for its exit). */
function workerSet(logger: Logger) {
  const set = {
    stopping: false,
    live: new Set<Worker>(),
    fork(): Worker {
      const worker = cluster.fork();
      set.live.add(worker);
      worker.once('exit', (code, signal) => {
        set.live.delete(worker);
        if (set.stopping) return;
        logger.error({ pid: worker.process.pid, code, signal }, 'rpc worker exited; starting another');
        set.fork();
      });
      return worker;
    },
    async stopAll(): Promise<void> {
      set.stopping = true;
      await Promise.all(
        [...set.live].map(
          (w) =>
            new Promise<void>((resolve) => {
              if (w.isDead()) return resolve();
              w.once('exit', () => resolve());
              w.process.kill('SIGTERM');
            }),
        ),
      );
    },
  };
  return set;
}

/**
 * In the primary: forks `count` workers (the same command line, so each runs `l2stack rpc` as a worker), resolves once
 * all listen, and replaces a worker that dies until stopped. Their stop is on `shutdown` before the first fork: a
 * SIGTERM while they start stops and waits for them too (no orphan keeps running after the primary has exited), and the
 * start then fails naming the stop.
 */
export async function forkWorkers(
  count: number,
  logger: Logger,
  shutdown: Shutdown,
  options: PrimaryOptions = {},
): Promise<RunningWorkers> {
  if (shutdown.signal.aborted) throw new Error('stopped before its workers were forked');
  const workers = workerSet(logger);
  let operator: RunningServer | undefined;
  const stop = async () => {
    await Promise.all([workers.stopAll(), operator?.close()]);
  };
  shutdown.add('rpc workers', stop);
  const started = new Promise<string>((resolve, reject) => {
    shutdown.signal.addEventListener('abort', () => reject(new Error('stopped while its workers were starting')), {
      once: true,
    });
    let listening = 0;
    let url: string | undefined;
    for (let i = 0; i < count; i++) {
      const worker = workers.fork();
      const onMessage = (m: unknown) => {
        if (!isListening(m)) return;
        worker.off('message', onMessage);
        url ??= m.l2stackRpcListening;
        if (++listening === count) resolve(url);
      };
      worker.on('message', onMessage);
      worker.once('exit', (code) => {
        if (listening < count && !workers.stopping)
          reject(new Error(`rpc worker ${worker.process.pid} exited with ${code} before it listened`));
      });
    }
  });
  let first: string;
  try {
    first = await started;
  } catch (err) {
    // A worker that cannot start would be replaced forever: stop them all and say why.
    await workers.stopAll();
    throw err;
  }
  if (options.operator) {
    try {
      operator = await listen(
        clusterOperatorListener(() => workers.live, count),
        options.operator.host,
        options.operator.port,
        'rpc operator',
        { limits: options.limits, logger },
      );
    } catch (err) {
      await workers.stopAll();
      throw err;
    }
  }
  logger.info({ url: first, operatorUrl: operator?.url, workers: count }, 'rpc workers listening');
  return { url: first, port: Number(new URL(first).port), operatorUrl: operator?.url, stop };
}

export const isClusterWorker = () => cluster.isWorker;
