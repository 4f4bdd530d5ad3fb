import type { Common } from '../common/kernel.js';
import { createProvider } from '../common/chain/provider.js';
import type { DbClient } from '../common/db/client.js';
import { acquireLeadership } from '../common/db/lock.js';
import { migrate } from '../common/db/migrations.js';
import { counter } from '../common/metrics.js';
import { sleep } from '../common/shutdown.js';
import type { StateConfig } from './config.js';
import { FinalizationFollower } from './finalization.js';
import { Ingestor, ReorgBelowFinalizedError } from './ingest.js';
import { STATE_SCHEMA, stateMigrations } from './migrations.js';
import { PgStore } from './pg-store.js';
import { createProofBackend, type ProofBackend } from './proof-backend.js';
import { createJsonRpcCaller } from './rpc-client.js';
import { WorldState } from './state.js';
import { hashProviderOf, pinStateHash } from './state-hash.js';

export { loadStateConfig, stateEnv, type StateConfig } from './config.js';
export type { ProofBackend } from './proof-backend.js';
export { WorldState } from './state.js';
export * as verify from './verify.js';

export interface RunningStateManager {
  stop(): Promise<void>;
  /** svc_getProof, for the RPC endpoint. */
  proofBackend: ProofBackend;
  /** The account-tree root after an applied block (what the devnet coordinator submits when it finalizes). */
  rootAt(block: bigint): Promise<string | undefined>;
  /** The last applied L2 block (-1 before genesis is applied). */
  latestBlock(): bigint;
  /** The latest L2 block finalized on L1, once read. */
  latestFinalized(): bigint | undefined;
}

interface LoopDeps {
  signal: AbortSignal;
  logger: Common['logger'];
  errors: { inc(labels: { loop: string }): void };
  pollIntervalMs: number;
}

/**
 * Runs `body` until stopped: again at once while it reports more work, after the poll interval otherwise, backing off
 * on failures.
 */
async function runLoop(
  name: string,
  body: () => Promise<boolean>,
  { signal, logger, errors, pollIntervalMs }: LoopDeps,
): Promise<void> {
  let failures = 0;
  while (!signal.aborted) {
    let busy = false;
    try {
      busy = await body();
      failures = 0;
    } catch (err) {
      if (signal.aborted) break;
      failures++;
      errors.inc({ loop: name });
      const level = err instanceof ReorgBelowFinalizedError ? 'error' : 'warn';
      logger[level]({ err, loop: name, failures }, `state ${name} step failed; retrying`);
    }
    if (!busy) await sleep(failures > 0 ? Math.min(pollIntervalMs * 2 ** failures, 30_000) : pollIntervalMs, signal);
  }
}

/**
 * Prunes versions below the retention floor (finalized minus the retained blocks, never above the head) as finalization
 * advances.
 */
function createPruner(
  store: PgStore,
  finality: FinalizationFollower,
  config: StateConfig,
  logger: Common['logger'],
  head: () => bigint,
) {
  let prunedFloor = -1n;
  return async (): Promise<void> => {
    const f = finality.latestFinalized();
    if (f === undefined) return;
    let floor = f - BigInt(config.retainedFinalizedBlocks) + 1n;
    if (floor > head()) floor = head();
    if (floor <= prunedFloor || floor <= 0n) return;
    const removed = await store.prune(floor);
    prunedFloor = floor;
    if (removed > 0)
      logger.debug({ floor: floor.toString(), removed }, 'pruned state versions below the retention floor');
  };
}

/** The ingest loop, on the one instance that holds the "state-ingest" leadership of this schema. */
async function ingestWhileLeader(
  db: DbClient,
  schema: string,
  ingestor: Ingestor,
  store: PgStore,
  deps: LoopDeps,
  onHead: (head: bigint) => void,
): Promise<void> {
  const lead = await acquireLeadership(db, `state-ingest:${schema}`, { signal: deps.signal, logger: deps.logger });
  if (!lead) return;
  const both = AbortSignal.any([deps.signal, lead.signal]);
  try {
    await runLoop(
      'ingest',
      async () => {
        if (both.aborted) return false;
        const busy = await ingestor.step(both);
        onHead((await store.head())?.number ?? -1n);
        return busy;
      },
      deps,
    );
  } finally {
    await lead.release();
  }
}

/** The loops until `signal` aborts: L1 finalization (pruning as it advances), L2 ingest on the leader, the head. */
function runLoops(
  parts: { db: DbClient; schema: string; store: PgStore; finality: FinalizationFollower; ingestor: Ingestor },
  config: StateConfig,
  { logger, metrics }: Pick<Common, 'logger' | 'metrics'>,
  signal: AbortSignal,
  head: { get(): bigint; set(h: bigint): void },
): Promise<unknown> {
  const { db, schema, store, finality, ingestor } = parts;
  const errors = counter(metrics, 'l2stack_state_loop_errors_total', 'Failed iterations of the state manager loops', [
    'loop',
  ] as const);
  const deps: LoopDeps = { signal, logger, errors, pollIntervalMs: config.pollIntervalMs };
  const prune = createPruner(store, finality, config, deps.logger, head.get);
  const finalityStep = async () => {
    const more = await finality.step();
    await prune();
    return more;
  };
  // Replicas that do not ingest still learn the head from the store.
  const headStep = async () => {
    head.set((await store.head())?.number ?? -1n);
    return false;
  };
  return Promise.allSettled([
    runLoop('finalization', finalityStep, deps),
    ingestWhileLeader(db, schema, ingestor, store, deps, head.set),
    runLoop('head', headStep, deps),
  ]);
}

/**
 * Starts the state manager: migrations, then two loops: L1 finalization and L2 ingest (the ingest loop
 * only on the instance holding the "state-ingest" leadership, so replicas sharing a database serve proofs
 * while one writes), with pruning below the retention floor as finalization advances.
 */
export async function startStateManager({
  common,
  db,
  config,
}: {
  common: Common;
  db: DbClient;
  config: StateConfig;
}): Promise<RunningStateManager> {
  const logger = common.logger.child({ module: 'state' });
  const schema = config.schema ?? STATE_SCHEMA;
  await db.query('state.migrate', (knex) => migrate(knex, schema, stateMigrations));
  const store = new PgStore(db, schema);
  await pinStateHash(store, config.hash);
  const world = new WorldState(store, hashProviderOf(config.hash));
  const l1 = createProvider(config.l1RpcUrl);
  const l2 = createProvider(config.l2RpcUrl);
  const l2Rpc = createJsonRpcCaller(config.l2RpcUrl);
  let head = (await store.head())?.number ?? -1n;
  const finality = new FinalizationFollower(store, l1, config.l1MessageService, logger, common.metrics, {
    fromBlock: config.l1FromBlock,
    logRange: config.l1LogRange,
    rootAt: (b) => world.rootAt(b),
  });
  await finality.load();
  const ingestor = new Ingestor(world, l2, logger, common.metrics, {
    maxBlocksPerStep: config.maxBlocksPerStep,
    blocksPerTransaction: config.blocksPerTransaction,
    onCommit: (written) => {
      head = written;
    },
    genesisAccounts: config.genesisAccounts,
    finalized: () => finality.latestFinalized(),
    rpc: l2Rpc,
    traceMethod: config.traceMethod,
  });

  const controller = new AbortController();
  const signal = AbortSignal.any([controller.signal, common.shutdown.signal]);
  const loops = runLoops({ db, schema, store, finality, ingestor }, config, { ...common, logger }, signal, {
    get: () => head,
    set: (h) => (head = h),
  });

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      controller.abort(new Error('state manager stopped'));
      await loops;
      l1.destroy();
      l2.destroy();
    })());
  common.shutdown.add('state manager', stop);
  logger.info(
    { schema, hash: config.hash, head: head.toString(), finalized: finality.latestFinalized()?.toString() },
    'state manager started',
  );

  return {
    stop,
    proofBackend: createProofBackend(world, {
      latestFinalized: () => finality.latestFinalized(),
      ingestedHead: () => head,
      retainedFinalizedBlocks: config.retainedFinalizedBlocks,
      metrics: common.metrics,
      logger,
    }),
    rootAt: (b) => world.rootAt(b),
    latestBlock: () => head,
    latestFinalized: () => finality.latestFinalized(),
  };
}
