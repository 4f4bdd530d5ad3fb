import { createCommon, type Common } from './kernel.js';
import { createDbClient, type DbClient } from './db/client.js';
import type { DatabaseConfig } from './db/config.js';
import type { LevelWithSilent } from 'pino';

/**
 * The one life of a long-running command (a service, the devnet, the whole dev stack): common → signal handlers →
 * database → start → run until SIGINT/SIGTERM → teardown. Each step registers its own teardown with `common.shutdown`;
 * a failed start-up runs the teardown of whatever had started before the error propagates, so nothing is left behind.
 */
export interface LifecycleSpec {
  /** The process name in every log line. */
  name: string;
  level?: LevelWithSilent;
  /** The effective configuration (already redacted), logged once before anything starts. */
  effectiveConfig?: Record<string, string | undefined>;
  /** The database to open; may log its choice (it receives the common context). */
  database: (common: Common) => DatabaseConfig;
  /** Where embedded PGlite lives when the configuration names no directory. */
  pgliteDefault?: string;
  /**
   * Starts the command. `openDb` opens the database once (later calls return the same promise) and registers its
   * closing; a command opens it when it is ready to (after its port checks, or alongside loading its code), never
   * before the signal handlers are installed.
   */
  start: (ctx: { common: Common; openDb: () => Promise<DbClient> }) => Promise<void>;
}

/** Runs `spec` and resolves the exit code once it has been stopped (0 for a requested stop). */
export async function runLifecycle(spec: LifecycleSpec): Promise<number> {
  const common = createCommon({ level: spec.level, name: spec.name });
  if (spec.effectiveConfig) common.logger.info({ config: spec.effectiveConfig }, 'effective configuration');
  const stopped = runUntilStopped(common);
  let opening: Promise<DbClient> | undefined;
  const openDb = () => {
    if (!opening) {
      const database = spec.database(common);
      const pending = createDbClient(database, { pgliteDefault: spec.pgliteDefault, logger: common.logger });
      opening = pending;
      common.shutdown.add('database', async () => (await pending).close());
      void pending.then(
        (db) => {
          db.instrument(common.metrics);
          common.logger.info({ database: db.description }, 'database opened');
        },
        () => undefined,
      );
    }
    return opening;
  };
  try {
    await spec.start({ common, openDb });
  } catch (err) {
    // A start cut short by SIGINT/SIGTERM is the requested stop, not a failure: its teardown is under way.
    if (common.shutdown.requested) {
      common.logger.info({ err }, 'stopped while starting');
      return stopped;
    }
    await common.shutdown.run('start-up failed');
    throw err;
  }
  return stopped;
}

/**
 * Blocks until SIGINT/SIGTERM, then runs the shutdown registry (everything the command started, in reverse order) and
 * resolves the exit code: 0 for a requested stop.
 */
export function runUntilStopped(common: Common): Promise<number> {
  return new Promise((resolve) => {
    common.shutdown.installSignalHandlers((code) => {
      common.logger.flush();
      // Whatever handle a dependency forgot to close must not keep a stopped service alive.
      setTimeout(() => process.exit(code), 500).unref();
      resolve(code);
    });
  });
}
