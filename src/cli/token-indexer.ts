import type { Command } from './command.js';
import { createCommon } from './context.js';
import { runUntilStopped } from './run.js';
import { loadBoth } from './token-api.js';
import { createDbClient } from '../common/db/client.js';

export const tokenIndexerCommand: Command = {
  name: 'token-indexer',
  summary: 'index tokens, swaps and prices from the chain for the token data API',
  async run() {
    const { loadTokenIndexerConfig, startTokenIndexer } = await import('../token-api/index.js');
    const { common: base, own } = loadBoth(loadTokenIndexerConfig);
    const common = createCommon({ level: base.config.logLevel, name: 'token-indexer' });
    common.logger.info({ config: { ...base.effective, ...own.effective } }, 'effective configuration');
    const stopped = runUntilStopped(common);
    const db = await createDbClient(base.config.database);
    common.shutdown.add('database', () => db.close());
    try {
      await startTokenIndexer({ common, db, config: own.config });
    } catch (err) {
      await common.shutdown.run('start-up failed');
      throw err;
    }
    return stopped;
  },
};
