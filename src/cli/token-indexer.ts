import type { CommandBody } from './command.js';
import { runService } from './service-command.js';

export const tokenIndexerCommand: CommandBody = {
  async run() {
    // Loaded here, not with the command: `--help` needs none of the service's modules.
    const { loadTokenIndexerConfig, startTokenIndexer } = await import('../token-api/index.js');
    return runService('token-indexer', loadTokenIndexerConfig, (ctx, config) => startTokenIndexer({ ...ctx, config }));
  },
};
