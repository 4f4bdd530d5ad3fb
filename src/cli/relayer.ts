import type { CommandBody } from './command.js';
import { createCommon } from './context.js';
import { runUntilStopped } from './run.js';
import { readProcessEnv } from '../common/config/process-env.js';
import { createDbClient } from '../common/db/client.js';
import { defaultPgliteDir } from '../common/db/config.js';
import { parseRelayerEnv } from '../relayer/config.js';
import { requeueCommand } from './relayer-requeue.js';

export const relayerCommand: CommandBody = {
  subcommands: [requeueCommand],
  async run() {
    // Every problem is reported (ConfigError) before any chain or database is touched.
    const { config, effective } = parseRelayerEnv(readProcessEnv());
    const common = createCommon({ level: config.logLevel, name: 'relayer' });
    common.logger.info({ config: effective }, 'effective configuration');
    const stopped = runUntilStopped(common);
    try {
      // Opening the database (PGlite compiles and boots Postgres) overlaps loading the pipeline's code:
      // together they are most of a restart, which a standby or a crashed relayer waits for.
      // Embedded PGlite lives on disk by default, so a restart keeps every message, status and nonce.
      const opening = createDbClient(config.database, { pgliteDefault: defaultPgliteDir('relayer') }).then((db) => {
        common.shutdown.add('database', () => db.close());
        common.logger.info({ database: db.description }, 'database opened');
        return db;
      });
      const [{ startRelayer }, db] = await Promise.all([import('../relayer/index.js'), opening]);
      await startRelayer({ common, db, config });
    } catch (err) {
      await common.shutdown.run('start-up failed');
      throw err;
    }
    return stopped;
  },
};
