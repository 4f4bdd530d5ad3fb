import type { Common } from '../../common/kernel.js';
import { createProvider } from '../../common/chain/provider.js';
import type { DbClient } from '../../common/db/client.js';
import { migrate } from '../../common/db/migrations.js';
import { normalizeIndexerConfig, type TokenIndexerConfig } from '../config.js';
import { TOKEN_API_SCHEMA, tokenApiMigrations } from '../migrations.js';
import { IndexerEngine } from './engine.js';
import type { IndexerHealth } from '../readiness.js';
import { IndexerStore } from './store.js';
import { TokenIndexer, indexerMetrics } from './runner.js';

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

/**
 * Starts the token indexer (`l2stack token-indexer`, or inside `l2stack token-api`). It waits for the
 * single-writer lock, then follows the chain from its stored cursor.
 */
export async function startTokenIndexer(options: {
  common: Common;
  db: DbClient;
  config: TokenIndexerConfig;
  schema?: string;
}): Promise<TokenIndexerHandle> {
  const { common, db } = options;
  const config = normalizeIndexerConfig(options.config);
  const schema = options.schema ?? TOKEN_API_SCHEMA;
  const logger = common.logger.child({ module: 'token-indexer' });
  await db.query('token_api.migrate_indexer', (knex) => migrate(knex, schema, tokenApiMigrations));
  const provider = createProvider(config.rpcUrl, config.chainId);
  const store = new IndexerStore(schema);
  const controller = new AbortController();
  const indexer = new TokenIndexer({
    db,
    config,
    provider,
    store,
    engine: new IndexerEngine(config, provider, store, db),
    logger,
    metrics: indexerMetrics(common.metrics),
    signal: AbortSignal.any([controller.signal, common.shutdown.signal]),
  });
  const loop = indexer.run(`token-indexer:${schema}`);
  const stop = async () => {
    controller.abort();
    indexer.abandonStart();
    await loop;
    await indexer.settled();
  };
  common.shutdown.add('token-indexer', stop);
  // An operation, then the derived figures it may have moved, in turn with the indexer's other steps.
  const thenDerived = (op: () => Promise<void>) =>
    indexer.whenReady(async () => {
      await op();
      await indexer.refreshDerived();
    });
  return {
    syncToHead: () => indexer.whenReady(() => indexer.syncToHead()),
    refreshTokenList: () => thenDerived(() => indexer.refreshTokenList()),
    refreshSupplies: (all) => thenDerived(() => indexer.refreshSupplies(all)),
    health: () => ({ ...indexer.health }),
    stop,
  };
}
