import type { CommandBody } from './command.js';
import { runLifecycle } from '../common/lifecycle.js';
import { readProcessEnv } from '../common/config/process-env.js';
import { defaultPgliteDir } from '../common/db/config.js';
import { parseRelayerEnv } from '../relayer/config.js';
import { requeueCommand } from './relayer-requeue.js';
import { resetChainPinCommand } from './relayer-reset-chain-pin.js';

export const relayerCommand: CommandBody = {
  subcommands: [requeueCommand, resetChainPinCommand],
  run() {
    // Every problem is reported (ConfigError) before any chain or database is touched.
    const { config, effective } = parseRelayerEnv(readProcessEnv());
    return runLifecycle({
      name: 'relayer',
      level: config.logLevel,
      effectiveConfig: effective,
      database: () => config.database,
      // Embedded PGlite lives on disk by default, so a restart keeps every message, status and nonce.
      pgliteDefault: defaultPgliteDir('relayer'),
      start: async ({ common, openDb }) => {
        // Opening the database (PGlite compiles and boots Postgres) overlaps loading the pipeline's code:
        // together they are most of a restart, which a standby or a crashed relayer waits for.
        const [{ startRelayer }, db] = await Promise.all([import('../relayer/index.js'), openDb()]);
        const relayer = await startRelayer({ common, db, config });
        // A database of other chains: the relayer logged the difference and sent nothing; exit 1.
        void relayer.fatal.then(async () => {
          await common.shutdown.run('fatal: the relayer cannot run on these chains');
          common.logger.flush();
          process.exit(1);
        });
      },
    });
  },
};
