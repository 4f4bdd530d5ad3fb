import { createCommon, type Common } from './context.js';
import { runUntilStopped } from './run.js';
import { ConfigError } from '../common/config/env.js';
import { loadCommonConfig, type CommonConfig } from '../common/config/common-env.js';
import { readProcessEnv } from '../common/config/process-env.js';
import { createDbClient, type DbClient } from '../common/db/client.js';
import { defaultPgliteDir } from '../common/db/config.js';

type Env = Record<string, string | undefined>;
type Loaded<T> = { config: T; effective: Env };

/** Loads the common and the service's own config, reporting the problems of both in one ConfigError. */
export function loadBoth<T>(load: (env: Env) => T, env: Env = readProcessEnv()): { common: Loaded<CommonConfig>; own: T } {
  const problems: string[] = [];
  const attempt = <R>(fn: () => R): R | undefined => {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
      return undefined;
    }
  };
  const common = attempt(() => loadCommonConfig(env));
  const own = attempt(() => load(env));
  if (problems.length > 0) throw new ConfigError(problems);
  return { common: common!, own: own! };
}

/**
 * The life of a service command: every config problem reported before anything starts, the effective
 * config logged once (redacted), the database opened, the service started, then run until SIGINT/SIGTERM.
 * A failed start-up stops whatever had started before the error propagates.
 */
export async function runService<T>(
  name: string,
  load: (env: Env) => Loaded<T>,
  start: (ctx: { common: Common; db: DbClient }, config: T) => Promise<unknown>,
): Promise<number> {
  const { common: base, own } = loadBoth(load);
  const common = createCommon({ level: base.config.logLevel, name });
  common.logger.info({ config: { ...base.effective, ...own.effective } }, 'effective configuration');
  const stopped = runUntilStopped(common);
  try {
    // Embedded PGlite lives on disk by default, so a restart keeps the service's state.
    const db = await createDbClient(base.config.database, { pgliteDefault: defaultPgliteDir(name) });
    common.shutdown.add('database', () => db.close());
    common.logger.info({ database: db.description }, 'database opened');
    await start({ common, db }, own.config);
  } catch (err) {
    await common.shutdown.run('start-up failed');
    throw err;
  }
  return stopped;
}
