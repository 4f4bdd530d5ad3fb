import type { Command } from './command.js';
import { createCommon } from './context.js';
import { runUntilStopped } from './run.js';
import { readProcessEnv } from '../common/config/process-env.js';
import { createDbClient } from '../common/db/client.js';

export const relayerCommand: Command = {
  name: 'relayer',
  summary: 'claim cross-layer messages in both directions (configured by environment variables; see .env.example)',
  async run() {
    const { parseRelayerEnv, startRelayer } = await import('../relayer/index.js');
    // Every problem is reported (ConfigError) before any chain or database is touched.
    const { config, effective } = parseRelayerEnv(readProcessEnv());
    const common = createCommon({ level: config.logLevel, name: 'relayer' });
    common.logger.info({ config: effective }, 'effective configuration');
    const stopped = runUntilStopped(common);
    try {
      const db = await createDbClient(config.database);
      common.shutdown.add('database', () => db.close());
      await startRelayer({ common, db, config });
    } catch (err) {
      await common.shutdown.run('start-up failed');
      throw err;
    }
    return stopped;
  },
};
