import type { Common } from '../../common/kernel.js';
import { createProvider } from '../../common/chain/provider.js';
import type { DbClient } from '../../common/db/client.js';
import { acquireLeadership, type Leadership } from '../../common/db/lock.js';
import { migrate } from '../../common/db/migrations.js';
import { BaseError, errorMessage } from '../../common/errors.js';
import { counter, gauge, histogram } from '../../common/metrics.js';
import { sleep } from '../../common/shutdown.js';
import { normalizeIndexerConfig, type TokenIndexerConfig } from '../config.js';
import { TOKEN_API_SCHEMA, tokenApiMigrations } from '../migrations.js';
import { IndexerEngine, mapLimit } from './engine.js';
import { readTotalSupply } from './metadata.js';
import { isPossibleSpam } from './spam.js';
import type { IndexerHealth } from '../readiness.js';
import { IndexerStore } from './store.js';
import { loadTokenList } from './token-list.js';

export interface TokenIndexerHandle {
  /** Indexes up to head − confirmations now and refreshes the derived figures; resolves to the cursor. */
  syncToHead(): Promise<number>;
  /** Reloads the token list and re-applies logos, secure and spam flags. */
  refreshTokenList(): Promise<void>;
  /** Re-reads totalSupply() of every token (or only those due) and refreshes fdv and secure flags. */
  refreshSupplies(all?: boolean): Promise<void>;
  /** For readiness: whether this process indexes (or stands by) and when it last reached the head. */
  health(): IndexerHealth;
  stop(): Promise<void>;
}

export class ChainMismatchError extends BaseError {
  override name = 'ChainMismatchError';
}

const DERIVED_EVERY_MS = 60_000;

/**
 * Starts the token indexer (`l2stack token-indexer`, or inside `l2stack token-api`). It waits for the
 * single-writer lock, then follows the chain from its stored cursor. `onCommit` runs after every write
 * (the API in the same process drops its response cache then).
 */
export async function startTokenIndexer(options: {
  common: Common;
  db: DbClient;
  config: TokenIndexerConfig;
  schema?: string;
  onCommit?: () => void;
}): Promise<TokenIndexerHandle> {
  const { common, db } = options;
  const config = normalizeIndexerConfig(options.config);
  const schema = options.schema ?? TOKEN_API_SCHEMA;
  const logger = common.logger.child({ module: 'token-indexer' });
  await db.query('token_api.migrate_indexer', (knex) => migrate(knex, schema, tokenApiMigrations));
  const provider = createProvider(config.rpcUrl, config.chainId);
  const store = new IndexerStore(schema);
  const engine = new IndexerEngine(config, provider, store, db);

  const m = {
    indexed: gauge(common.metrics, 'l2stack_token_indexer_indexed_block', 'Last block the token indexer has committed'),
    target: gauge(common.metrics, 'l2stack_token_indexer_target_block', 'Chain head minus confirmations'),
    progress: gauge(common.metrics, 'l2stack_token_indexer_backfill_progress', 'Share of blocks indexed, from the start block to the target (0..1)'),
    logs: counter(common.metrics, 'l2stack_token_indexer_logs_total', 'DEX logs processed'),
    swaps: counter(common.metrics, 'l2stack_token_indexer_swaps_total', 'Swaps seen'),
    errors: counter(common.metrics, 'l2stack_token_indexer_errors_total', 'Failed indexer iterations'),
    batch: histogram(common.metrics, 'l2stack_token_indexer_batch_seconds', 'Time to index one block range', [], [0.01, 0.05, 0.1, 0.5, 1, 5, 30]),
  };

  const controller = new AbortController();
  const signal = AbortSignal.any([controller.signal, common.shutdown.signal]);
  let cursor = config.startBlock - 1;
  let batchBlocks = config.batchBlocks;
  let lastDerived = 0;
  let lastList = 0;
  let chainId = config.chainId;
  let exclusive: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = exclusive.then(fn, fn);
    exclusive = next.catch(() => undefined);
    return next;
  };

  const refreshDerived = async () => {
    await db.query('token_api.refresh_derived', (knex) => store.refreshDerived(knex, new Date(), config.secureMinMarketCapUsd));
    lastDerived = Date.now();
    options.onCommit?.();
  };

  const refreshTokenList = async () => {
    if (!config.tokenList) return;
    engine.listed = await loadTokenList(config.tokenList, chainId!, signal);
    lastList = Date.now();
    // Listed tokens are indexed even before they trade.
    const fresh = await engine.newTokens(engine.listed.keys());
    if (fresh.length) {
      await db.query('token_api.insert_listed_tokens', (knex) => store.insertTokens(knex, fresh));
      engine.rememberTokens(fresh);
    }
    const rows = (await db.query('token_api.listing_inputs', (knex) => store.listingInputs(knex))).map((t) => {
      const listing = engine.listed.get(t.address);
      return {
        address: t.address,
        listed: listing !== undefined,
        logo: listing?.logoURI ?? null,
        spam: isPossibleSpam({ name: t.name, symbol: t.symbol, metadataComplete: t.metadata_ok, listed: listing !== undefined, listedSymbols: engine.listedSymbolsExcept(t.address) }),
      };
    });
    await db.query('token_api.apply_listing', (knex) => store.applyListing(knex, rows));
    logger.info({ listed: engine.listed.size }, 'token list applied');
  };

  const refreshSupplies = async (all = false) => {
    const olderThan = all ? new Date(Date.now() + 1_000) : new Date(Date.now() - config.metadataRefreshMs);
    for (;;) {
      const due = await db.query('token_api.tokens_due_for_supply', (knex) => store.tokensDueForSupply(knex, olderThan, 200));
      if (due.length === 0) break;
      const read = await mapLimit(due, 8, async (t) => ({ address: t.address, decimals: t.decimals, raw: (await readTotalSupply(provider, t.address)) ?? 0n }));
      await db.query('token_api.update_supplies', (knex) => store.updateSupplies(knex, read));
      if (due.length < 200) break;
    }
  };

  // Readiness: a committed batch counts as progress, so a long backfill is not mistaken for a stall.
  const health: IndexerHealth = { state: 'standing by', lastProgressAt: undefined };
  const syncToHead = async (): Promise<number> => {
    const head = await provider.getBlockNumber();
    const target = head - config.confirmations;
    m.target.set(target);
    const started = cursor;
    while (cursor < target && !signal.aborted) {
      const from = cursor + 1;
      const to = Math.min(cursor + batchBlocks, target);
      const end = m.batch.startTimer();
      let result;
      try {
        result = await engine.runBatch(from, to);
      } catch (err) {
        await engine.load(); // memory may be ahead of the rolled-back transaction
        if (batchBlocks > 1 && /range|limit|too (many|large)|exceed|10000|response size/i.test(errorMessage(err))) {
          batchBlocks = Math.max(1, Math.floor(batchBlocks / 2));
          logger.warn({ from, to, batchBlocks, err: errorMessage(err) }, 'log range too large; retrying with smaller batches');
          continue;
        }
        throw err;
      } finally {
        end();
      }
      batchBlocks = Math.min(config.batchBlocks, batchBlocks * 2);
      cursor = to;
      options.onCommit?.();
      m.indexed.set(cursor);
      health.lastProgressAt = Date.now();
      m.logs.inc(result.logs);
      m.swaps.inc(result.swaps);
      const span = Math.max(1, target - config.startBlock + 1);
      const progress = Math.min(1, (cursor - config.startBlock + 1) / span);
      m.progress.set(progress);
      if (target - started > batchBlocks || result.logs > 0) {
        logger.info({ from, to, target, progress: Number((progress * 100).toFixed(2)), ...result }, cursor < target ? 'backfilling' : 'indexed');
      }
    }
    if (cursor > started || Date.now() - lastDerived > DERIVED_EVERY_MS) await refreshDerived();
    return cursor;
  };

  let leadership: Leadership | undefined;
  let initialized: (() => void) | undefined;
  let failedInit: ((err: unknown) => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    initialized = resolve;
    failedInit = reject;
  });
  ready.catch(() => undefined);

  const init = async () => {
    const actual = Number((await provider.getNetwork()).chainId);
    if (config.chainId !== undefined && actual !== config.chainId) {
      throw new ChainMismatchError(`TOKEN_INDEXER_RPC_URL serves chain ${actual}, but TOKEN_INDEXER_CHAIN_ID is ${config.chainId}`);
    }
    chainId = actual;
    await engine.load();
    const stored = await db.query('token_api.read_cursor', (knex) => store.cursor(knex));
    cursor = stored ?? config.startBlock - 1;
    const seeds = await engine.newTokens([config.nativeToken, ...config.stableTokens, ...config.quoteTokens].filter((a): a is string => a !== undefined));
    if (seeds.length) {
      await db.query('token_api.insert_seed_tokens', (knex) => store.insertTokens(knex, seeds));
      engine.rememberTokens(seeds);
    }
    await refreshTokenList().catch((err) => logger.warn({ err: errorMessage(err) }, 'token list not loaded; retrying later'));
    logger.info({ cursor, chainId, pools: engine.pools.size, tokens: engine.decimals.size }, 'token indexer ready');
  };

  const loop = (async () => {
    leadership = await acquireLeadership(db, `token-indexer:${schema}`, { signal, logger });
    if (!leadership) return;
    health.state = 'starting';
    const active = AbortSignal.any([signal, leadership.signal]);
    for (let attempt = 0; !active.aborted; attempt++) {
      try {
        await serial(init);
        initialized?.();
        break;
      } catch (err) {
        if (err instanceof ChainMismatchError) {
          failedInit?.(err);
          logger.error({ err: err.message }, 'token indexer stopped');
          return;
        }
        logger.warn({ err: errorMessage(err), attempt }, 'token indexer could not start; retrying');
        if (!(await sleep(Math.min(1_000 * 2 ** attempt, 30_000), active))) return;
      }
    }
    while (!active.aborted) {
      try {
        await serial(async () => {
          await syncToHead();
          health.state = 'running';
          health.lastProgressAt = Date.now();
          if (config.tokenList && Date.now() - lastList > config.tokenListRefreshMs) await refreshTokenList();
          await refreshSupplies();
        });
      } catch (err) {
        m.errors.inc();
        logger.warn({ err: errorMessage(err) }, 'token indexer iteration failed; retrying');
      }
      if (!(await sleep(config.pollMs, active))) break;
    }
  })();

  const stop = async () => {
    controller.abort();
    failedInit?.(new Error('token indexer stopped'));
    await loop;
    await exclusive;
    await leadership?.release();
  };
  common.shutdown.add('token-indexer', stop);
  const whenReady = <T>(fn: () => Promise<T>) => ready.then(() => serial(fn));
  return {
    syncToHead: () => whenReady(syncToHead),
    refreshTokenList: () => whenReady(async () => {
      await refreshTokenList();
      await refreshDerived();
    }),
    refreshSupplies: (all) => whenReady(async () => {
      await refreshSupplies(all);
      await refreshDerived();
    }),
    health: () => ({ ...health }),
    stop,
  };
}
