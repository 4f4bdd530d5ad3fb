import type { CommandBody } from './command.js';
import { createCommon } from './context.js';
import { runUntilStopped } from './run.js';
import { readProcessEnv } from '../common/config/process-env.js';
import { createDbClient } from '../common/db/client.js';
import { parseRelayerEnv } from '../relayer/config.js';

export const relayerCommand: CommandBody = {
  async run() {
    // Every problem is reported (ConfigError) before any chain or database is touched.
    const { config, effective } = parseRelayerEnv(readProcessEnv());
    const common = createCommon({ level: config.logLevel, name: 'relayer' });
    common.logger.info({ config: effective }, 'effective configuration');
    const stopped = runUntilStopped(common);
    try {
      // Opening the database (PGlite compiles and boots Postgres) overlaps loading the pipeline's code:
      // together they are most of a restart, which a standby or a crashed relayer waits for.
      const opening = createDbClient(config.database).then((db) => {
        common.shutdown.add('database', () => db.close());
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
