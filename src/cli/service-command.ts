import type { Common } from '../common/kernel.js';
import { runLifecycle } from '../common/lifecycle.js';
import { ConfigError } from '../common/config/env.js';
import { loadCommonConfig, type CommonConfig } from '../common/config/common-env.js';
import { readProcessEnv } from '../common/config/process-env.js';
import type { DbClient } from '../common/db/client.js';
import { defaultPgliteDir } from '../common/db/config.js';

type Env = Record<string, string | undefined>;
type Loaded<T> = { config: T; effective: Env };

/** Loads the common and the service's own config, reporting the problems of both in one ConfigError. */
export function loadBoth<T>(
  load: (env: Env) => T,
  env: Env = readProcessEnv(),
): { common: Loaded<CommonConfig>; own: T } {
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
 * The life of a service command: every config problem reported before anything starts, then the common
 * lifecycle (src/common/lifecycle.ts) with the effective config logged once (redacted), the database
 * opened, the service started, and run until SIGINT/SIGTERM.
 */
export async function runService<T>(
  name: string,
  load: (env: Env) => Loaded<T>,
  start: (ctx: { common: Common; db: DbClient }, config: T) => Promise<unknown>,
): Promise<number> {
  const { common: base, own } = loadBoth(load);
  return runLifecycle({
    name,
    level: base.config.logLevel,
    effectiveConfig: { ...base.effective, ...own.effective },
    database: () => base.config.database,
    // Embedded PGlite lives on disk by default, so a restart keeps the service's state.
    pgliteDefault: defaultPgliteDir(name),
    start: async ({ common, openDb }) => {
      await start({ common, db: await openDb() }, own.config);
    },
  });
}
