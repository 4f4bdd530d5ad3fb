import type { Command } from './command.js';
import { createCommon } from './context.js';
import { runUntilStopped } from './run.js';
import { ConfigError } from '../common/config/env.js';
import { loadCommonConfig, type CommonConfig } from '../common/config/common-env.js';
import { readProcessEnv } from '../common/config/process-env.js';
import { createDbClient } from '../common/db/client.js';

/** Loads both config parts, reporting the problems of both in one ConfigError. */
export function loadBoth<T>(load: (env: Record<string, string | undefined>) => T): { common: { config: CommonConfig; effective: Record<string, string | undefined> }; own: T } {
  const env = readProcessEnv();
  const problems: string[] = [];
  let common: ReturnType<typeof loadCommonConfig> | undefined;
  let own: T | undefined;
  try {
    common = loadCommonConfig(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  try {
    own = load(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { common: common!, own: own! };
}

export const tokenApiCommand: Command = {
  name: 'token-api',
  summary: 'serve the token data API (and run its indexer and supply job)',
  options: { 'no-indexer': { type: 'boolean' } },
  optionHelp: ['--no-indexer   only serve; another process runs `l2stack token-indexer`'],
  async run({ values }) {
    const { loadTokenApiConfig, startTokenApi } = await import('../token-api/index.js');
    const { common: base, own } = loadBoth((env) => loadTokenApiConfig(env, { indexer: values['no-indexer'] !== true }));
    const common = createCommon({ level: base.config.logLevel, name: 'token-api' });
    common.logger.info({ config: { ...base.effective, ...own.effective } }, 'effective configuration');
    const stopped = runUntilStopped(common);
    const db = await createDbClient(base.config.database);
    common.shutdown.add('database', () => db.close());
    try {
      await startTokenApi({ common, db, config: own.config });
    } catch (err) {
      await common.shutdown.run('start-up failed');
      throw err;
    }
    return stopped;
  },
};
