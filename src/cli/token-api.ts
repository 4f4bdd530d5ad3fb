import type { CommandBody } from './command.js';
import { runService } from './service-command.js';

export const tokenApiCommand: CommandBody = {
  options: { 'no-indexer': { type: 'boolean' } },
  optionHelp: ['--no-indexer   only serve; another process runs `l2stack token-indexer`'],
  async run({ values }) {
    // Loaded here, not with the command: a bad flag or `--help` needs none of the service's modules.
    const { loadTokenApiConfig, startTokenApi } = await import('../token-api/index.js');
    return runService(
      'token-api',
      (env) => loadTokenApiConfig(env, { indexer: values['no-indexer'] !== true }),
      (ctx, config) => startTokenApi({ ...ctx, config }),
    );
  },
};
