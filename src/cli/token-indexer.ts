import type { CommandBody } from './command.js';
import { runService } from './service-command.js';
import { loadTokenIndexerConfig, startTokenIndexer } from '../token-api/index.js';

export const tokenIndexerCommand: CommandBody = {
  async run() {
    return runService('token-indexer', loadTokenIndexerConfig, (ctx, config) => startTokenIndexer({ ...ctx, config }));
  },
};
