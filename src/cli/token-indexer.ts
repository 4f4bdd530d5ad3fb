import type { Command } from './command.js';
import { runService } from './service-command.js';

export const tokenIndexerCommand: Command = {
  name: 'token-indexer',
  summary: 'index tokens, swaps and prices from the chain for the token data API',
  async run() {
    const { loadTokenIndexerConfig, startTokenIndexer } = await import('../token-api/index.js');
    return runService('token-indexer', loadTokenIndexerConfig, (ctx, config) => startTokenIndexer({ ...ctx, config }));
  },
};
