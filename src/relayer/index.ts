import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Common } from '../common/kernel.js';
import type { DbClient } from '../common/db/client.js';
import { migrate } from '../common/db/migrations.js';
import { acquireLeadership } from '../common/db/lock.js';
import { listen, type RunningServer } from '../common/http/server.js';
import { createRelayerApp } from './api/app.js';
import type { Check } from './api/context.js';
import { connectChain, rawRpc, type Chain } from './chain.js';
import { DEFAULT_OPERATIONS, type Direction, type RelayerConfig } from './config.js';
import { RELAYER_SCHEMA, relayerMigrations } from './db/migrations.js';
import { RelayerRepository } from './db/repository.js';
import { createRelayerMetrics, registerReadinessGauge } from './metrics.js';
import { createClaimingProcessor } from './pipeline/claiming.js';
import type { DirectionContext } from './pipeline/context.js';
import { createL1L2AnchoringProcessor, createSizeProcessor } from './pipeline/l1-to-l2.js';
import { createFinalizationIndexer, createL2L1AnchoringProcessor } from './pipeline/l2-to-l1.js';
import { createListener } from './pipeline/listener.js';
import { runLoop } from './pipeline/loop.js';
import { sleep } from '../common/shutdown.js';
import { createReceiptPersister } from './pipeline/persister.js';
import { createResimulationProcessor } from './pipeline/resimulation.js';
import { createStuckWatcher } from './pipeline/stuck.js';
import { ClaimSender } from './sender.js';
import { SignerFunds } from './funds.js';
import { createSigner } from './signer.js';
import { checkChainPin, ChainPinMismatchError, type ChainIdentity } from './db/chain-pin.js';

export { loadRelayerConfig, parseRelayerEnv, relayerConfigFrom, relayerEnv } from './config.js';
export type { RelayerConfig, Direction } from './config.js';
export { RELAYER_SCHEMA, relayerMigrations, MESSAGE_STATUSES, type MessageStatus } from './db/migrations.js';

/**
 * The readiness check of a direction's signers: failing while none of them can pay its next claim (claiming
 * of the direction is paused); while only some can, it passes and its detail names the paused ones.
 */
function fundsCheck(funds: readonly SignerFunds[]): Check {
  const checks = funds.map((f) => f.check());
  const failing = checks.filter((c) => !c.ok);
  const name = checks[0]!.name;
  if (failing.length === 0) return { name, ok: true };
  const detail = failing.map((c) => c.detail).join('; ');
  if (failing.length === checks.length) return { name, ok: false, detail };
  return { name, ok: true, detail: `${checks.length - failing.length} of ${checks.length} signers can claim; ${detail}` };
}

/** The readiness detail of a direction whose leadership lock another instance holds. */
export const STANDING_BY = 'standing by: another instance leads this direction';

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
export async function startRelayer({ common, db, config, schema = RELAYER_SCHEMA, validateResponses }: StartRelayerOptions): Promise<Relayer> {
  const logger = common.logger.child({ module: 'relayer' });
  await db.run((knex) => migrate(knex, schema, relayerMigrations));
  const instance = `relayer ${hostname()}:${process.pid}:${randomBytes(2).toString('hex')}`;
  const repo = new RelayerRepository(db, schema, instance);
  const ops = config.operations ?? DEFAULT_OPERATIONS;
  const metrics = createRelayerMetrics(common.metrics, repo, { stuckAfterSeconds: ops.stuckAfterSeconds });
  const controller = new AbortController();
  const signal = AbortSignal.any([controller.signal, common.shutdown.signal]);
  const enabled: Direction[] = [];
  if (config.l1ToL2.autoClaimEnabled) enabled.push('L1_TO_L2');
  if (config.l2ToL1.autoClaimEnabled) enabled.push('L2_TO_L1');
  const health = Object.fromEntries(enabled.map((d) => [d, { lastProgressAt: undefined as number | undefined, lastBlock: undefined as number | undefined, state: 'starting' }]));
  const tasks: Promise<void>[] = [];
  const funds: Partial<Record<Direction, SignerFunds[]>> = {};

  for (const d of enabled) {
    const dc = d === 'L1_TO_L2' ? config.l1ToL2 : config.l2ToL1;
    if (!dc.eoaEnabled && !dc.calldataEnabled) {
      logger.warn({ direction: d }, `${d === 'L1_TO_L2' ? 'L1_L2' : 'L2_L1'}_EOA_ENABLED and _CALLDATA_ENABLED are both false: every message of this direction will be EXCLUDED`);
    }
  }
  if (enabled.length === 0) logger.warn('L1_L2_AUTO_CLAIM_ENABLED and L2_L1_AUTO_CLAIM_ENABLED are both false: no direction is relayed');

  async function runDirection(d: Direction, l1: Chain, l2: Chain): Promise<void> {
    const [origin, destination] = d === 'L1_TO_L2' ? [l1, l2] : [l2, l1];
    const [originConfig, destinationConfig] = d === 'L1_TO_L2' ? [config.l1, config.l2] : [config.l2, config.l1];
    // The primary signer first, then the extra keys (*_SIGNER_PRIVATE_KEYS), each with its own nonce sequence.
    const signers = await Promise.all([destinationConfig.signer!, ...destinationConfig.extraSigners].map((sc) => createSigner(sc)));
    const signer = signers[0]!;
    const h = health[d]!;
    const f = (funds[d] = signers.map((sg) => new SignerFunds({ direction: d, chain: destination, address: sg.address, minBalanceWei: destinationConfig.signerMinBalanceWei, logger: logger.child({ direction: d }), metrics })));
    while (!signal.aborted) {
      h.state = 'waiting for leadership';
      const lead = await acquireLeadership(db, `relayer:${schema}:${d}`, { signal, logger, onStandby: () => void (h.state = STANDING_BY) });
      if (!lead) return;
      h.state = 'running';
      const s = AbortSignal.any([signal, lead.signal]);
      const senders = signers.map((sg, i) => new ClaimSender(repo, destination, sg, { maxNonceDiff: config.claiming.maxNonceDiff, logger, metrics, direction: d, primary: i === 0 }));
      const sender = senders[0]!;
      const ctx: DirectionContext = {
        direction: d, config, dir: d === 'L1_TO_L2' ? config.l1ToL2 : config.l2ToL1,
        origin, originConfig, destination, destinationConfig, repo, metrics, logger: logger.child({ direction: d }), sender, senders, health: h, signal: s, funds: f,
      };
      logger.info({ direction: d, signer: signer.address, signers: signers.map((sg) => sg.address), origin: origin.name, destination: destination.name }, 'direction started');
      const loop = (name: string, intervalMs: number, tick: () => Promise<boolean>) =>
        runLoop({ name, direction: d, intervalMs, signal: s, logger: ctx.logger, metrics, tick });
      const di = destinationConfig.listener;
      const loops = [loop('listener', originConfig.listener.intervalMs, createListener(ctx))];
      if (d === 'L1_TO_L2') {
        loops.push(loop('transaction-size', di.intervalMs, createSizeProcessor(ctx)), loop('anchoring', di.intervalMs, createL1L2AnchoringProcessor(ctx)));
      } else {
        loops.push(loop('finalizations', di.intervalMs, createFinalizationIndexer(ctx)), loop('anchoring', di.intervalMs, createL2L1AnchoringProcessor(ctx)));
      }
      loops.push(loop('claiming', di.intervalMs, createClaimingProcessor(ctx)), loop('receipts', di.receiptPollingIntervalMs, createReceiptPersister(ctx)));
      // Re-simulation times are a minute apart by default: a look every 5 s is soon enough and costs next to nothing.
      if (ops.resimulate.enabled) loops.push(loop('resimulation', Math.max(di.intervalMs, 5_000), createResimulationProcessor(ctx)));
      // Often enough that a stuck message is logged soon after it crosses the threshold, never more than every second.
      loops.push(loop('stuck', Math.min(Math.max((ops.stuckAfterSeconds * 1_000) / 4, 1_000), 30_000), createStuckWatcher(ctx, ops.stuckAfterSeconds)));
      await Promise.all(loops);
      if (signal.aborted) {
        // Drained: each loop finished its iteration and claiming started no new claim once stopping began, so
        // every claim signed so far was broadcast. Claims awaiting receipts stay PENDING with their signed
        // transactions; the next leader (this relayer restarted, or a standby) resolves them. Waiting for
        // receipts here could outlast any stop timeout (an L1 block may take minutes).
        const counts = await repo.countsByStatus().catch(() => undefined);
        const inFlight = counts ? (counts.find((c) => c.direction === d && c.status === 'PENDING')?.count ?? 0) : 'unknown (database unreachable)';
        logger.info({ direction: d, inFlight }, `direction drained: ${inFlight} claim(s) in flight stay PENDING with their signed transactions and are resolved by the next run`);
      }
      await lead.release();
    }
  }

  const chains: { l1?: Chain; l2?: Chain } = {};
  let failFatal: (err: Error) => void = () => {};
  const fatal = new Promise<Error>((resolve) => (failFatal = resolve));
  /** The chain's id, its block 0 hash and our contract there; read until the node answers (or we stop). */
  async function chainIdentity(c: Chain, s: AbortSignal): Promise<ChainIdentity | undefined> {
    for (let warned = false; ; warned = true) {
      try {
        const genesis = await rawRpc<{ hash: string } | null>(c.url, 'eth_getBlockByNumber', ['0x0', false]);
        if (!genesis?.hash) throw new Error('the node has no block 0');
        return { layer: c.name, chainId: c.chainId.toString(), genesisHash: genesis.hash, contractAddress: c.contract };
      } catch (err) {
        if (!warned) logger.warn({ chain: c.name, err: (err as Error).message }, 'reading the genesis block failed; retrying');
        if (!(await sleep(2_000, s))) return undefined;
      }
    }
  }
  async function boot(): Promise<void> {
    if (enabled.length === 0) return;
    const [l1, l2] = await Promise.all([
      connectChain({ name: 'L1', url: config.l1.rpcUrl, contract: config.l1.contractAddress, metrics: common.metrics, logger }, signal),
      connectChain({ name: 'L2', url: config.l2.rpcUrl, contract: config.l2.contractAddress, metrics: common.metrics, logger }, signal),
    ]);
    if (!l1 || !l2) return;
    Object.assign(chains, { l1, l2 });
    // Before any direction starts: a database of other chains holds signed claims, nonces and cursors that must
    // never reach these chains (a reset testnet keeps its contract addresses and often its chain id).
    const identities = await Promise.all([l1, l2].map((c) => chainIdentity(c, signal)));
    if (identities.some((i) => i === undefined)) return;
    // The database may be unreachable right now: tried again until it answers (or we stop), like every loop.
    for (let warned = false; ; warned = true) {
      try {
        const { pinnedNow } = await checkChainPin(repo, identities as ChainIdentity[]);
        if (pinnedNow.length > 0) logger.info({ pins: identities }, `database pinned to these chains (${pinnedNow.join(', ')})`);
        break;
      } catch (err) {
        if (err instanceof ChainPinMismatchError) {
          // One error line, whoever started us (the command exits 1 on `fatal`; `l2stack dev` keeps the rest
          // running and readiness names it).
          logger.error(err.message);
          for (const h of Object.values(health)) h.state = `stopped: ${err.message}`;
          failFatal(err);
          return;
        }
        if (!warned) logger.warn({ err: (err as Error).message }, 'checking the chain pin failed; retrying');
        if (!(await sleep(2_000, signal))) return;
      }
    }
    await Promise.all(enabled.map((d) => runDirection(d, l1, l2).catch((err) => {
      health[d]!.state = `stopped: ${(err as Error).message}`;
      logger.error({ err, direction: d }, 'direction stopped');
    })));
  }
  tasks.push(boot());

  if (config.cleaner.enabled) {
    tasks.push(runLoop({
      name: 'cleaner', direction: 'all', intervalMs: config.cleaner.intervalMs, signal, logger, metrics,
      tick: async () => {
        const deleted = await repo.deleteFinalOlderThan(config.cleaner.daysBeforeNowToDelete);
        if (deleted > 0) logger.info({ deleted }, 'old messages in final statuses deleted');
        return false;
      },
    }));
  }

  const readiness = async (): Promise<Check[]> => {
    const probe = async (name: string, fn: () => Promise<unknown>): Promise<Check> => {
      try {
        await fn();
        return { name, ok: true };
      } catch (err) {
        return { name, ok: false, detail: (err as Error).message };
      }
    };
    const checks = await Promise.all([
      probe('database', () => db.run((k) => k.raw('select 1'), { retries: 0 })),
      probe('l1Rpc', () => rawRpc(config.l1.rpcUrl, 'eth_blockNumber', [], 3_000).catch((e: Error) => Promise.reject(new Error(`eth_blockNumber failed: ${e.message}`)))),
      probe('l2Rpc', () => rawRpc(config.l2.rpcUrl, 'eth_blockNumber', [], 3_000).catch((e: Error) => Promise.reject(new Error(`eth_blockNumber failed: ${e.message}`)))),
    ]);
    for (const d of enabled) {
      const h = health[d]!;
      const interval = (d === 'L1_TO_L2' ? config.l1 : config.l2).listener.intervalMs;
      const staleMs = Math.max(5 * interval, 60_000);
      const name = `listener.${d}`;
      // A standby is ready: it takes over when the active instance goes (and an orchestrator rolling two
      // replicas waits for readiness, which a standby that never passed would block).
      if (h.state === STANDING_BY) checks.push({ name, ok: true, detail: STANDING_BY });
      else if (h.lastProgressAt === undefined) checks.push({ name, ok: false, detail: `listener not started (${h.state})` });
      else if (Date.now() - h.lastProgressAt > staleMs) {
        checks.push({ name, ok: false, detail: `no block processed for ${Math.round((Date.now() - h.lastProgressAt) / 1000)} s (last processed block ${h.lastBlock ?? 'none'})` });
      } else checks.push({ name, ok: true });
    }
    // After the listeners: whether each leading direction's signer can pay its next claim.
    for (const d of enabled) {
      const f = funds[d];
      if (f && health[d]!.state !== STANDING_BY) checks.push(fundsCheck(f));
    }
    return checks;
  };
  registerReadinessGauge(common.metrics, readiness);

  let server: RunningServer;
  try {
    server = await listen(createRelayerApp({ repo, db, registry: common.metrics, readiness }, logger, { validateResponses, rateLimit: config.api.rateLimit, admin: { token: config.api.adminToken } }), config.api.host, config.api.port, 'relayer API', { limits: config.api.http, logger });
  } catch (err) {
    controller.abort();
    await Promise.allSettled(tasks);
    throw err;
  }
  logger.info({ url: server.url, directions: enabled, schema }, 'relayer started');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      controller.abort();
      await server.close();
      await Promise.allSettled(tasks);
      chains.l1?.provider.destroy();
      chains.l2?.provider.destroy();
      logger.info('relayer stopped');
    })());
  common.shutdown.add('relayer', stop);
  return { url: server.url, schema, instance, stop, fatal };
}
