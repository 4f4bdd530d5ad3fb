import type { CommandBody } from './command.js';
import { runService } from './service-command.js';
import { loadTokenApiConfig, startTokenApi } from '../token-api/index.js';

export const tokenApiCommand: CommandBody = {
  options: { 'no-indexer': { type: 'boolean' } },
  optionHelp: ['--no-indexer   only serve; another process runs `l2stack token-indexer`'],
  async run({ values }) {
    return runService(
      'token-api',
      (env) => loadTokenApiConfig(env, { indexer: values['no-indexer'] !== true }),
      (ctx, config) => startTokenApi({ ...ctx, config }),
    );
  },
};
