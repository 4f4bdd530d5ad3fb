import type { JsonRpcProvider } from 'ethers';
import type { DbClient } from '../../common/db/client.js';
import { acquireLeadership, type Leadership } from '../../common/db/lock.js';
import { BaseError, errorMessage } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { counter, gauge, histogram, type Registry } from '../../common/metrics.js';
import { sleep } from '../../common/shutdown.js';
import type { TokenIndexerConfig } from '../config.js';
import type { IndexerHealth } from '../readiness.js';
import { mapLimit } from '../../common/concurrency.js';
import type { BatchResult, IndexerEngine } from './engine.js';
import { readTotalSupply } from './metadata.js';
import type { IndexerStore } from './store.js';
import { loadTokenList } from './token-list.js';

export class ChainMismatchError extends BaseError {
  override name = 'ChainMismatchError';
}

const DERIVED_EVERY_MS = 60_000;
/** Errors of a node that refuses a log range as too large: the batch is halved and tried again. */
const RANGE_TOO_LARGE = /range|limit|too (many|large)|exceed|10000|response size/i;

export function indexerMetrics(registry: Registry) {
  return {
    indexed: gauge(registry, 'l2stack_token_indexer_indexed_block', 'Last block the token indexer has committed'),
    target: gauge(registry, 'l2stack_token_indexer_target_block', 'Chain head minus confirmations'),
    progress: gauge(
      registry,
      'l2stack_token_indexer_backfill_progress',
      'Share of blocks indexed, from the start block to the target (0..1)',
    ),
    logs: counter(registry, 'l2stack_token_indexer_logs_total', 'DEX logs processed'),
    swaps: counter(registry, 'l2stack_token_indexer_swaps_total', 'Swaps seen'),
    errors: counter(registry, 'l2stack_token_indexer_errors_total', 'Failed indexer iterations'),
    batch: histogram(
      registry,
      'l2stack_token_indexer_batch_seconds',
      'Time to index one block range',
      [],
      [0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    ),
  };
}

export interface TokenIndexerDeps {
  db: DbClient;
  config: TokenIndexerConfig;
  provider: JsonRpcProvider;
  store: IndexerStore;
  engine: IndexerEngine;
  logger: Logger;
  metrics: ReturnType<typeof indexerMetrics>;
  signal: AbortSignal;
}

/**
 * One indexer's state: its cursor, the batch size (halved when a node refuses a range, grown back after),
 * and when the derived figures and the token list were last refreshed. Every database-writing step runs
 * `serial` (one at a time), whether the loop or an operation (syncToHead of a test or the API) asks.
 */
export class TokenIndexer {
  /** Readiness: a committed batch counts as progress, so a long backfill is not mistaken for a stall. */
  readonly health: IndexerHealth = { state: 'standing by', lastProgressAt: undefined };
  private cursor: number;
  private batchBlocks: number;
  private lastDerived = 0;
  private lastList = 0;
  private chainId: number | undefined;
  private exclusive: Promise<unknown> = Promise.resolve();
  private leadership: Leadership | undefined;
  private readonly ready: Promise<void>;
  private markReady: () => void = () => undefined;
  private failStart: (err: unknown) => void = () => undefined;

  constructor(private readonly d: TokenIndexerDeps) {
    this.cursor = d.config.startBlock - 1;
    this.batchBlocks = d.config.batchBlocks;
    this.chainId = d.config.chainId;
    this.ready = new Promise<void>((resolve, reject) => {
      this.markReady = resolve;
      this.failStart = reject;
    });
    this.ready.catch(() => undefined);
  }

  serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.exclusive.then(fn, fn);
    this.exclusive = next.catch(() => undefined);
    return next;
  }

  /** Runs `fn` in turn once the indexer has started (its chain checked, its view loaded). */
  whenReady<T>(fn: () => Promise<T>): Promise<T> {
    return this.ready.then(() => this.serial(fn));
  }

  /** A stop before the start completed: callers waiting in whenReady get an error, not a hang. */
  abandonStart(): void {
    this.failStart(new Error('token indexer stopped'));
  }

  /** Resolves once the running step has finished and the lock is released. */
  async settled(): Promise<void> {
    await this.exclusive;
    await this.leadership?.release();
  }

  async refreshDerived(): Promise<void> {
    const { db, store, config } = this.d;
    await db.query('token_api.refresh_derived', (knex) =>
      store.refreshDerived(knex, new Date(), config.secureMinMarketCapUsd),
    );
    this.lastDerived = Date.now();
  }

  async refreshTokenList(): Promise<void> {
    const { db, store, config, engine } = this.d;
    if (!config.tokenList) return;
    engine.listed = await loadTokenList(config.tokenList, this.chainId!, this.d.signal);
    this.lastList = Date.now();
    // Listed tokens are indexed even before they trade.
    const fresh = await engine.newTokens(engine.listed.keys());
    if (fresh.length) {
      await db.query('token_api.insert_listed_tokens', (knex) => store.insertTokens(knex, fresh));
      engine.rememberTokens(fresh);
    }
    const inputs = await db.query('token_api.listing_inputs', (knex) => store.listingInputs(knex));
    const rows = inputs.map((t) => ({
      address: t.address,
      ...engine.listingOf(t.address, { name: t.name, symbol: t.symbol, complete: t.metadata_ok }),
    }));
    await db.query('token_api.apply_listing', (knex) => store.applyListing(knex, rows));
    this.d.logger.info({ listed: engine.listed.size }, 'token list applied');
  }

  async refreshSupplies(all = false): Promise<void> {
    const { db, store, config, provider } = this.d;
    const olderThan = all ? new Date(Date.now() + 1_000) : new Date(Date.now() - config.metadataRefreshMs);
    for (;;) {
      const due = await db.query('token_api.tokens_due_for_supply', (knex) =>
        store.tokensDueForSupply(knex, olderThan, 200),
      );
      if (due.length === 0) break;
      const read = await mapLimit(due, 8, async (t) => ({
        address: t.address,
        decimals: t.decimals,
        raw: (await readTotalSupply(provider, t.address)) ?? 0n,
      }));
      await db.query('token_api.update_supplies', (knex) => store.updateSupplies(knex, read));
      if (due.length < 200) break;
    }
  }

  /** Indexes up to head − confirmations, batch by batch; refreshes the derived figures when anything moved. */
  async syncToHead(): Promise<number> {
    const { config, metrics } = this.d;
    const target = (await this.d.provider.getBlockNumber()) - config.confirmations;
    metrics.target.set(target);
    const started = this.cursor;
    while (this.cursor < target && !this.d.signal.aborted) {
      const from = this.cursor + 1;
      const to = Math.min(this.cursor + this.batchBlocks, target);
      const result = await this.indexBatch(from, to);
      if (result === 'smaller') continue;
      this.batchBlocks = Math.min(config.batchBlocks, this.batchBlocks * 2);
      this.cursor = to;
      this.recordProgress({ from, to, target, started }, result);
    }
    if (this.cursor > started || Date.now() - this.lastDerived > DERIVED_EVERY_MS) await this.refreshDerived();
    return this.cursor;
  }

  /** One batch; 'smaller' when the node refused the range and the batch was halved. */
  private async indexBatch(from: number, to: number): Promise<BatchResult | 'smaller'> {
    const end = this.d.metrics.batch.startTimer();
    try {
      return await this.d.engine.runBatch(from, to);
    } catch (err) {
      await this.d.engine.load(); // memory may be ahead of the rolled-back transaction
      if (this.batchBlocks > 1 && RANGE_TOO_LARGE.test(errorMessage(err))) {
        this.batchBlocks = Math.max(1, Math.floor(this.batchBlocks / 2));
        this.d.logger.warn(
          { from, to, batchBlocks: this.batchBlocks, err: errorMessage(err) },
          'log range too large; retrying with smaller batches',
        );
        return 'smaller';
      }
      throw err;
    } finally {
      end();
    }
  }

  private recordProgress(
    at: { from: number; to: number; target: number; started: number },
    result: { logs: number; swaps: number },
  ): void {
    const { config, metrics, logger } = this.d;
    metrics.indexed.set(this.cursor);
    this.health.lastProgressAt = Date.now();
    metrics.logs.inc(result.logs);
    metrics.swaps.inc(result.swaps);
    const span = Math.max(1, at.target - config.startBlock + 1);
    const progress = Math.min(1, (this.cursor - config.startBlock + 1) / span);
    metrics.progress.set(progress);
    if (at.target - at.started > this.batchBlocks || result.logs > 0) {
      logger.info(
        { from: at.from, to: at.to, target: at.target, progress: Number((progress * 100).toFixed(2)), ...result },
        this.cursor < at.target ? 'backfilling' : 'indexed',
      );
    }
  }

  /** Checks the chain, loads the view and the cursor, and records the configured tokens. */
  private async init(): Promise<void> {
    const { db, store, config, engine, logger } = this.d;
    const actual = Number((await this.d.provider.getNetwork()).chainId);
    if (config.chainId !== undefined && actual !== config.chainId) {
      throw new ChainMismatchError(
        `TOKEN_INDEXER_RPC_URL serves chain ${actual}, but TOKEN_INDEXER_CHAIN_ID is ${config.chainId}`,
      );
    }
    this.chainId = actual;
    await engine.load();
    const stored = await db.query('token_api.read_cursor', (knex) => store.cursor(knex));
    this.cursor = stored ?? config.startBlock - 1;
    const seeds = await engine.newTokens(
      [config.nativeToken, ...config.stableTokens, ...config.quoteTokens].filter((a): a is string => a !== undefined),
    );
    if (seeds.length) {
      await db.query('token_api.insert_seed_tokens', (knex) => store.insertTokens(knex, seeds));
      engine.rememberTokens(seeds);
    }
    await this.refreshTokenList().catch((err) =>
      logger.warn({ err: errorMessage(err) }, 'token list not loaded; retrying later'),
    );
    logger.info(
      { cursor: this.cursor, chainId: this.chainId, pools: engine.pools.size, tokens: engine.decimals.size },
      'token indexer ready',
    );
  }

  /** Waits for the single-writer lock (`lockName`), starts, then indexes every pollMs until stopped or deposed. */
  async run(lockName: string): Promise<void> {
    this.leadership = await acquireLeadership(this.d.db, lockName, { signal: this.d.signal, logger: this.d.logger });
    if (!this.leadership) return;
    this.health.state = 'starting';
    const active = AbortSignal.any([this.d.signal, this.leadership.signal]);
    if (!(await this.start(active))) return;
    while (!active.aborted) {
      try {
        await this.serial(() => this.iterate());
      } catch (err) {
        this.d.metrics.errors.inc();
        this.d.logger.warn({ err: errorMessage(err) }, 'token indexer iteration failed; retrying');
      }
      if (!(await sleep(this.d.config.pollMs, active))) break;
    }
  }

  /** init with backoff until it succeeds; false when stopped or the chain is the wrong one. */
  private async start(active: AbortSignal): Promise<boolean> {
    for (let attempt = 0; !active.aborted; attempt++) {
      try {
        await this.serial(() => this.init());
        this.markReady();
        return true;
      } catch (err) {
        if (err instanceof ChainMismatchError) {
          this.failStart(err);
          this.d.logger.error({ err: err.message }, 'token indexer stopped');
          return false;
        }
        this.d.logger.warn({ err: errorMessage(err), attempt }, 'token indexer could not start; retrying');
        if (!(await sleep(Math.min(1_000 * 2 ** attempt, 30_000), active))) return false;
      }
    }
    return false;
  }

  private async iterate(): Promise<void> {
    const { config } = this.d;
    await this.syncToHead();
    this.health.state = 'running';
    this.health.lastProgressAt = Date.now();
    if (config.tokenList && Date.now() - this.lastList > config.tokenListRefreshMs) await this.refreshTokenList();
    await this.refreshSupplies();
  }
}
