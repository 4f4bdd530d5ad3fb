import type { DbClient } from '../common/db/client.js';
import { acquireLeadership } from '../common/db/lock.js';
import type { Logger } from '../common/log.js';
import type { Chain } from './chain.js';
import type { Direction, RelayerConfig } from './config.js';
import { Status, type MessageStatus } from './message/status.js';
import type { RelayerRepository } from './db/repository.js';
import { SignerFunds } from './claim/funds.js';
import type { RelayerMetrics } from './metrics.js';
import { createClaimingProcessor } from './claim/claiming.js';
import type { DirectionContext } from './pipeline/context.js';
import { createL1L2AnchoringProcessor, createSizeProcessor } from './pipeline/l1-to-l2.js';
import { createFinalizationIndexer, createL2L1AnchoringProcessor } from './pipeline/l2-to-l1.js';
import { createListener } from './pipeline/listener.js';
import { runLoop } from './pipeline/loop.js';
import { Waker } from './pipeline/waker.js';
import { createReceiptPersister } from './pipeline/persister.js';
import { createResimulationProcessor } from './pipeline/resimulation.js';
import { createStuckWatcher } from './pipeline/stuck.js';
import { ClaimSender } from './claim/sender.js';
import type { ChainPinWatch } from './pin-watch.js';
import { createSigner, type TxSigner } from './signer.js';

/** The readiness detail of a direction whose leadership lock another instance holds. */
export const STANDING_BY = 'standing by: another instance leads this direction';

/** What readiness knows of a direction: the listener's progress and where the direction stands. */
export interface DirectionHealth {
  lastProgressAt: number | undefined;
  lastBlock: number | undefined;
  state: string;
}

/** What every direction of one relayer shares. */
export interface RelayerRun {
  config: RelayerConfig;
  db: DbClient;
  schema: string;
  repo: RelayerRepository;
  metrics: RelayerMetrics;
  logger: Logger;
  /** Aborted when the relayer stops. */
  signal: AbortSignal;
  enabled: Direction[];
  health: Record<string, DirectionHealth>;
  /** Each leading direction's signers' funds, for readiness. */
  funds: Partial<Record<Direction, SignerFunds[]>>;
  /** The chain pin as re-read while running (set once the start's check passed). */
  pin?: ChainPinWatch;
}

/** A loop of the whole relayer (not of one direction), stopping with it. */
export const relayerLoop = (run: RelayerRun, name: string, intervalMs: number, tick: () => Promise<boolean>) =>
  runLoop({ name, direction: 'all', intervalMs, signal: run.signal, logger: run.logger, metrics: run.metrics, tick });

/**
 * The signers of a direction (claims go to its destination): the primary first, then the extra keys
 * (*_SIGNER_PRIVATE_KEYS), each with its own nonce sequence.
 */
export function directionSigners(config: RelayerConfig, d: Direction): Promise<TxSigner[]> {
  const destinationConfig = d === 'L1_TO_L2' ? config.l2 : config.l1;
  return Promise.all([destinationConfig.signer!, ...destinationConfig.extraSigners].map((sc) => createSigner(sc)));
}

/**
 * One direction for as long as the relayer runs: its signers (`made`, or made here), then, each time this instance
 * holds the direction's leadership lock, its loops until they stop (shutdown, or the lock lost: then it waits for the
 * lock again).
 */
export async function runDirection(
  run: RelayerRun,
  d: Direction,
  l1: Chain,
  l2: Chain,
  made: Promise<TxSigner[]> = directionSigners(run.config, d),
): Promise<void> {
  const { config, logger, signal, metrics } = run;
  const [origin, destination] = d === 'L1_TO_L2' ? [l1, l2] : [l2, l1];
  const destinationConfig = d === 'L1_TO_L2' ? config.l2 : config.l1;
  const signers = await made;
  const h = run.health[d]!;
  const owner = { direction: d, destination, destinationConfig, logger: logger.child({ direction: d }), metrics };
  const funds = (run.funds[d] = signers.map((sg) => new SignerFunds(owner, sg.address)));
  while (!signal.aborted) {
    h.state = 'waiting for leadership';
    const lead = await acquireLeadership(run.db, `relayer:${run.schema}:${d}`, {
      signal,
      logger,
      onStandby: () => void (h.state = STANDING_BY),
    });
    if (!lead) return;
    const led = AbortSignal.any([signal, lead.signal]);
    // The lock is kept while the chains do not match their pin, so a standby cannot take over on them either.
    while (!led.aborted && (await pinHolds(run, d, led))) {
      h.state = 'running';
      const halt = new AbortController();
      const unsubscribe = run.pin?.whenMismatched(() => halt.abort()) ?? (() => true);
      const s = AbortSignal.any([led, halt.signal]);
      const ctx = directionContext(run, d, [origin, destination], signers, funds, s);
      logger.info(
        {
          direction: d,
          signer: signers[0]!.address,
          signers: signers.map((sg: TxSigner) => sg.address),
          origin: origin.name,
          destination: destination.name,
        },
        'direction started',
      );
      await Promise.all(startLoops(run, ctx, s));
      unsubscribe();
    }
    if (signal.aborted) await logDrained(run, d);
    await lead.release();
  }
}

/** One run of a direction's loops: a sender per signer (the primary first) on the direction's chains. */
function directionContext(
  run: RelayerRun,
  d: Direction,
  [origin, destination]: [Chain, Chain],
  signers: TxSigner[],
  funds: SignerFunds[],
  signal: AbortSignal,
): DirectionContext {
  const { config, logger } = run;
  const senders = signers.map(
    (sg, i) =>
      new ClaimSender(run.repo, destination, sg, {
        maxNonceDiff: config.claiming.maxNonceDiff,
        logger,
        metrics: run.metrics,
        direction: d,
        primary: i === 0,
      }),
  );
  return {
    direction: d,
    config,
    dir: d === 'L1_TO_L2' ? config.l1ToL2 : config.l2ToL1,
    origin,
    originConfig: d === 'L1_TO_L2' ? config.l1 : config.l2,
    destination,
    destinationConfig: d === 'L1_TO_L2' ? config.l2 : config.l1,
    repo: run.repo,
    metrics: run.metrics,
    logger: logger.child({ direction: d }),
    sender: senders[0]!,
    senders,
    health: run.health[d]!,
    signal,
    funds,
    pin: run.pin,
  };
}

/**
 * Whether the direction may run: at once while the chains match their pin as last read (the start's check, then
 * every RELAYER_PIN_CHECK_INTERVAL_MS: no round trip before the first claim); else its state names the mismatch
 * and this waits until they match again (true) or the direction stops (false).
 */
async function pinHolds(run: RelayerRun, d: Direction, signal: AbortSignal): Promise<boolean> {
  const pin = run.pin;
  if (pin?.mismatch === undefined) return !signal.aborted;
  run.health[d]!.state = `stopped: chain pin mismatch (${pin.mismatch}): nothing is claimed`;
  return pin.cleared(signal);
}

/** The direction's loops, each at its own interval: listener, anchoring, claiming, receipts, re-simulation, stuck. */
function startLoops(run: RelayerRun, ctx: DirectionContext, signal: AbortSignal): Promise<void>[] {
  const d = ctx.direction;
  const ops = run.config.operations;
  // The loops that read messages of a status are woken when this process moves messages into it (waker.ts).
  const wakers = new Map<MessageStatus, Waker[]>();
  const unsubscribe = run.repo.onEntered((status) => {
    for (const w of wakers.get(status) ?? []) w.wake();
  });
  signal.addEventListener('abort', unsubscribe, { once: true });
  const loop = (
    name: string,
    intervalMs: number,
    tick: () => Promise<boolean>,
    wakeOn: readonly MessageStatus[] = [],
  ) => {
    const waker = new Waker();
    for (const status of wakeOn) wakers.set(status, [...(wakers.get(status) ?? []), waker]);
    return runLoop({ name, direction: d, intervalMs, signal, logger: ctx.logger, metrics: run.metrics, tick, waker });
  };
  const di = ctx.destinationConfig.listener;
  const loops = [loop('listener', ctx.originConfig.listener.intervalMs, createListener(ctx))];
  if (d === 'L1_TO_L2') {
    loops.push(
      loop('transaction-size', di.intervalMs, createSizeProcessor(ctx), [Status.SENT]),
      loop('anchoring', di.intervalMs, createL1L2AnchoringProcessor(ctx), [Status.TRANSACTION_SIZE_COMPUTED]),
    );
  } else {
    loops.push(
      loop('finalizations', di.intervalMs, createFinalizationIndexer(ctx)),
      loop('anchoring', di.intervalMs, createL2L1AnchoringProcessor(ctx), [Status.SENT]),
    );
  }
  // Claiming wakes on ANCHORED only: FEE_UNDERPRICED is entered by claiming itself, and a claim given back after a
  // failed broadcast is retried at the next interval on purpose. Receipts are not woken by new claims: they are
  // looked for at RECEIPT_POLLING_INTERVAL whatever happens.
  loops.push(
    loop('claiming', di.intervalMs, createClaimingProcessor(ctx), [Status.ANCHORED]),
    loop('receipts', di.receiptPollingIntervalMs, createReceiptPersister(ctx)),
  );
  // Re-simulation times are a minute apart by default: a look every 5 s is soon enough and costs next to nothing.
  if (ops.resimulate.enabled)
    loops.push(loop('resimulation', Math.max(di.intervalMs, 5_000), createResimulationProcessor(ctx)));
  // Often enough that a stuck message is logged soon after it crosses the threshold, never more than every second.
  loops.push(
    loop(
      'stuck',
      Math.min(Math.max((ops.stuckAfterSeconds * 1_000) / 4, 1_000), 30_000),
      createStuckWatcher(ctx, ops.stuckAfterSeconds),
    ),
  );
  return loops;
}

/**
 * Drained: each loop finished its iteration and claiming started no new claim once stopping began, so every
 * claim signed so far was broadcast. Claims awaiting receipts stay PENDING with their signed transactions; the
 * next leader (this relayer restarted, or a standby) resolves them. Waiting for receipts here could outlast any
 * stop timeout (an L1 block may take minutes).
 */
async function logDrained(run: RelayerRun, d: Direction): Promise<void> {
  const counts = await run.repo.countsByStatus().catch(() => undefined);
  const inFlight = counts
    ? (counts.find((c) => c.direction === d && c.status === Status.PENDING)?.count ?? 0)
    : 'unknown (database unreachable)';
  run.logger.info(
    { direction: d, inFlight },
    `direction drained: ${inFlight} claim(s) in flight stay PENDING with their signed transactions and are resolved by the next run`,
  );
}
