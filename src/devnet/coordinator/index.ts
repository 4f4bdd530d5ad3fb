import { Wallet } from 'ethers';
import { L1MessageService__factory, L2MessageService__factory } from '../../../generated/contracts/types/index.js';
import { createProvider } from '../../common/chain/provider.js';
import type { DbClient } from '../../common/db/client.js';
import { acquireLeadership } from '../../common/db/lock.js';
import { migrate } from '../../common/db/migrations.js';
import { gauge, counter, type Registry } from '../../common/metrics.js';
import { sleep } from '../../common/shutdown.js';
import type { Common } from '../../common/kernel.js';
import type { Logger } from '../../common/log.js';
import { devnetMigrations } from './migrations.js';
import { anchorNextBatch, scanL1Messages, type AnchoringContext } from './anchoring.js';
import { finalizeNewBlocks, type FinalizationContext, type StateRootSource } from './finalization.js';

export type { StateRootSource };

export interface CoordinatorConfig {
  l1: { rpcUrl: string; chainId: number; messageService: string };
  l2: { rpcUrl: string; chainId: number; messageService: string };
  /** Operator on L1 and message setter on L2 (a devnet key). */
  privateKey: string;
  l1Confirmations: number;
  anchorIntervalMs: number;
  finalizationIntervalMs: number;
  treeDepth: number;
  maxAnchorBatch: number;
  l1StartBlock: number;
}

export const DEFAULT_COORDINATOR = {
  l1Confirmations: 1,
  anchorIntervalMs: 1_000,
  finalizationIntervalMs: 2_000,
  treeDepth: 5,
  maxAnchorBatch: 100,
  l1StartBlock: 0,
};

export const DEVNET_SCHEMA = 'devnet';

export interface Coordinator {
  stop(): Promise<void>;
  /** Resolves once the first anchoring and finalization rounds ran (used by start-up to report readiness). */
  ready: Promise<void>;
}

type Task = 'anchor' | 'finalize';

/**
 * Every task's round, again each interval until `signal` aborts; a failed round is reported and tried again
 * the next interval. `markReady` once every task has run its first round, failed or not.
 */
async function runRounds(
  tasks: Record<Task, { intervalMs: number; round: () => Promise<void> }>,
  signal: AbortSignal,
  onFailure: (task: Task, err: unknown) => void,
  markReady: () => void,
): Promise<void> {
  const ran = new Set<Task>();
  const loop = async (task: Task) => {
    while (!signal.aborted) {
      try {
        await tasks[task].round();
      } catch (err) {
        if (signal.aborted) break;
        onFailure(task, err);
      }
      ran.add(task);
      if (ran.size === Object.keys(tasks).length) markReady();
      await sleep(tasks[task].intervalMs, signal);
    }
  };
  await Promise.all((Object.keys(tasks) as Task[]).map(loop));
}

/** The coordinator's progress gauges, and its report of a failed round (counted and logged). */
function coordinatorMetrics(metrics: Registry, logger: Logger) {
  const anchoredGauge = gauge(
    metrics,
    'l2stack_devnet_anchored_l1_message_number',
    'Last L1 message number anchored on L2',
  );
  const finalizedGauge = gauge(metrics, 'l2stack_devnet_finalized_l2_block', 'Last L2 block finalized on L1');
  const failures = counter(metrics, 'l2stack_devnet_coordinator_failures_total', 'Coordinator rounds that failed', [
    'task',
  ]);
  const onFailure = (task: Task, err: unknown) => {
    failures.inc({ task });
    logger.warn({ err, task }, 'coordinator round failed; retrying next interval');
  };
  return { anchoredGauge, finalizedGauge, onFailure };
}

/**
 * The devnet's stand-in for a sequencer's bridge duties: anchors confirmed L1→L2 message hashes on L2 and
 * finalizes L2 blocks on L1. Restart-safe (progress in the database, on-chain counters as truth) and a
 * single writer (advisory lock): a second coordinator on the same database stands by.
 */
export async function startCoordinator(options: {
  common: Common;
  db: DbClient;
  config: CoordinatorConfig;
  stateRoots?: StateRootSource;
  schema?: string;
}): Promise<Coordinator> {
  const { common, db, config } = options;
  const logger = common.logger.child({ module: 'coordinator' });
  const schema = options.schema ?? DEVNET_SCHEMA;
  await db.query('devnet.migrate', (knex) => migrate(knex, schema, devnetMigrations));

  const l1Provider = createProvider(config.l1.rpcUrl, config.l1.chainId, { pollingInterval: 100 });
  const l2Provider = createProvider(config.l2.rpcUrl, config.l2.chainId, { pollingInterval: 100 });
  // The coordinator is the operator of the devnet contracts (finalizeBlocks, RollingHashUpdated,
  // lastAnchoredL1MessageNumber are not in the published specs/abi), so it binds to the typechain
  // factories generated from their compiled ABI; services that talk to any deployment use specs/abi.
  const l1 = L1MessageService__factory.connect(config.l1.messageService, new Wallet(config.privateKey, l1Provider));
  const l2 = L2MessageService__factory.connect(config.l2.messageService, new Wallet(config.privateKey, l2Provider));

  const { anchoredGauge, finalizedGauge, onFailure } = coordinatorMetrics(common.metrics, logger);

  const stop = new AbortController();
  const stopped = AbortSignal.any([stop.signal, common.shutdown.signal]);
  const shared = { db, schema, l1, l2, logger };
  const anchoring: AnchoringContext = {
    ...shared,
    confirmations: config.l1Confirmations,
    maxBatch: config.maxAnchorBatch,
    startBlock: config.l1StartBlock,
    logWindow: 5_000,
  };
  const finalization: FinalizationContext = {
    ...shared,
    l2Provider,
    treeDepth: config.treeDepth,
    stateRoots: options.stateRoots,
  };

  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const run = (async () => {
    // One coordinator per devnet: the lock is named after the schema holding that devnet's progress.
    const leadership = await acquireLeadership(db, `devnet-coordinator:${schema}`, { signal: stopped, logger });
    if (!leadership) return;
    const signal = AbortSignal.any([stopped, leadership.signal]);
    const anchor = async () => {
      await scanL1Messages(anchoring);
      // Drain the backlog in batches of maxBatch before sleeping.
      while (!signal.aborted && (await anchorNextBatch(anchoring)) > 0);
      anchoredGauge.set(Number(await l2.lastAnchoredL1MessageNumber()));
    };
    const finalize = async () => {
      const finalized = await finalizeNewBlocks(finalization);
      if (finalized !== undefined) finalizedGauge.set(Number(finalized));
    };
    const tasks = {
      anchor: { intervalMs: config.anchorIntervalMs, round: anchor },
      finalize: { intervalMs: config.finalizationIntervalMs, round: finalize },
    };
    try {
      await runRounds(tasks, signal, onFailure, markReady);
    } finally {
      await leadership.release();
    }
  })();

  const stopCoordinator = async () => {
    stop.abort();
    await run;
    l1Provider.destroy();
    l2Provider.destroy();
  };
  common.shutdown.add('devnet coordinator', stopCoordinator);
  return { stop: stopCoordinator, ready };
}
