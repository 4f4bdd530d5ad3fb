import { dirname, resolve } from 'node:path';
import { UsageError, type CommandBody, type Options, type ParsedArgs } from './command.js';
import { intFlag, portFlag, stringFlag, stringOptions } from './args.js';
import type { Common } from '../common/kernel.js';
import { sendMessageCommand } from './send-message.js';
import { loadCommonConfig } from '../common/config/common-env.js';
import { readProcessEnv } from '../common/config/process-env.js';
import { PGLITE_MEMORY, describeDatabase, type DatabaseConfig } from '../common/db/config.js';
import { DEFAULT_STATE_FILE, writeStateFile } from '../devnet/state-file.js';

export const devnetOptions: Options = {
  ...stringOptions('state-file', 'l1-port', 'l2-port', 'history-hours', 'db-dir'),
  traffic: { type: 'boolean' },
};

export const devnetOptionHelp = [
  `--state-file PATH   where to write the devnet description (default ${DEFAULT_STATE_FILE})`,
  '--traffic           keep light live activity: a swap and a message each way every few seconds',
  '--l1-port N         L1 anvil port (default: a free port)',
  '--l2-port N         L2 anvil port (default: a free port)',
  '--history-hours N   hours of generated L2 trading history (default 26; 0 = none)',
  '--db-dir PATH       keep the embedded database in PATH (default: in memory, like the chains, which start',
  '                    fresh every time; DATABASE_PGLITE_DIR does the same)',
];

/**
 * The database of `l2stack devnet`/`dev`: the chains start fresh every time, so their embedded database
 * does too (in memory) unless --db-dir or DATABASE_PGLITE_DIR names a directory. Logged, so it is never a
 * surprise which one a run used.
 */
export function devnetDatabase(common: Common, database: DatabaseConfig, dbDir: string | undefined): DatabaseConfig {
  if (dbDir !== undefined && database.kind === 'postgres')
    throw new UsageError('--db-dir is for the embedded database, but DATABASE_HOST is set');
  const chosen: DatabaseConfig = dbDir !== undefined ? { kind: 'pglite', dataDir: dbDir } : database;
  const ephemeral = chosen.kind === 'pglite' && (chosen.dataDir === undefined || chosen.dataDir === PGLITE_MEMORY);
  common.logger.info(
    { database: describeDatabase(chosen) },
    ephemeral
      ? 'database: embedded PGlite in memory, gone at exit (--db-dir or DATABASE_PGLITE_DIR keeps it in a directory)'
      : `database: ${describeDatabase(chosen)}`,
  );
  return chosen;
}

/** The devnet flags shared by `l2stack devnet` and `l2stack dev`. */
export function parseDevnetFlags(values: ParsedArgs['values']) {
  const stateFile = resolve(stringFlag(values['state-file']) ?? DEFAULT_STATE_FILE);
  const dbDir = stringFlag(values['db-dir']);
  return {
    stateFile,
    dbDir: dbDir === undefined ? undefined : resolve(dbDir),
    options: {
      pidDir: dirname(stateFile),
      l1Port: portFlag('l1-port', values['l1-port'], 0),
      l2Port: portFlag('l2-port', values['l2-port'], 0),
      historyHours: intFlag('history-hours', values['history-hours'], 26),
      traffic: values.traffic === true,
    },
  };
}

export const devnetCommand: CommandBody = {
  options: devnetOptions,
  optionHelp: devnetOptionHelp,
  subcommands: [sendMessageCommand],
  async run({ values }) {
    const { stateFile, dbDir, options } = parseDevnetFlags(values);
    const { config } = loadCommonConfig(readProcessEnv());
    // The chains, contracts and history are loaded only to start them: `devnet send-message`, `--help` and a bad
    // flag never need them (1.25 s of start-up before, most of it importing these).
    const [{ runLifecycle }, { startDevnet }, { checkChainPorts }] = await Promise.all([
      import('../common/lifecycle.js'),
      import('../devnet/devnet.js'),
      import('../devnet/stack.js'),
    ]);
    return runLifecycle({
      name: 'devnet',
      level: config.logLevel,
      database: (common) => devnetDatabase(common, config.database, dbDir),
      start: async ({ common, openDb }) => {
        await checkChainPorts(options, common.logger);
        const dbOpening = openDb();
        const devnet = await startDevnet({ common, db: dbOpening, options });
        const db = await dbOpening;
        await writeStateFile(stateFile, devnet.state);
        process.stdout.write(
          [
            `L1 ${devnet.state.l1.rpcUrl} (chain ${devnet.state.l1.chainId}), message service ${devnet.state.l1.messageService}`,
            `L2 ${devnet.state.l2.rpcUrl} (chain ${devnet.state.l2.chainId}), message service ${devnet.state.l2.messageService}`,
            `state file ${stateFile}`,
            `database ${db.description}`,
            'l2stack devnet ready',
            '',
          ].join('\n'),
        );
      },
    });
  },
};
