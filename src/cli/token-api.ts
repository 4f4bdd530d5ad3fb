import type { Command } from './command.js';
import { runService } from './service-command.js';

export const tokenApiCommand: Command = {
  name: 'token-api',
  summary: 'serve the token data API (and run its indexer and supply job)',
  options: { 'no-indexer': { type: 'boolean' } },
  optionHelp: ['--no-indexer   only serve; another process runs `l2stack token-indexer`'],
  async run({ values }) {
    const { loadTokenApiConfig, startTokenApi } = await import('../token-api/index.js');
    return runService(
      'token-api',
      (env) => loadTokenApiConfig(env, { indexer: values['no-indexer'] !== true }),
      (ctx, config) => startTokenApi({ ...ctx, config }),
    );
  },
};
