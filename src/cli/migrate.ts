import type { CommandBody } from './command.js';
import { UsageError } from './command.js';
import { SERVICE_SCHEMAS } from '../services.js';
import { defaultPgliteDir, loadDatabaseConfig } from '../common/db/config.js';
import { createDbClient } from '../common/db/client.js';
import { migrate } from '../common/db/migrations.js';
import { readProcessEnv } from '../common/config/process-env.js';
import { createLogger } from '../common/log.js';

/** Schemas owned by code that runs inside another command's process (the state manager runs in `l2stack rpc`). */
const COMMAND_OF_SCHEMA: Record<string, string> = { state: 'rpc' };

const SERVICES = Object.keys(SERVICE_SCHEMAS);

export const migrateCommand: CommandBody = {
  usage: '[service ...]',
  maxPositionals: SERVICES.length,
  optionHelp: [`service: one or more of ${SERVICES.join(', ') || '(none yet)'}`],
  async run({ positionals }) {
    const names = positionals.length > 0 ? positionals : SERVICES;
    for (const name of names) {
      if (!(name in SERVICE_SCHEMAS))
        throw new UsageError(`unknown service "${name}"; known: ${SERVICES.join(', ') || '(none)'}`);
    }
    const logger = createLogger({ name: 'migrate' });
    const config = loadDatabaseConfig(readProcessEnv());
    // Without DATABASE_PGLITE_DIR each command's embedded database is its own directory, so each schema is
    // migrated where the command that uses it opens it; otherwise one database holds every schema.
    const perCommand = config.kind === 'pglite' && config.dataDir === undefined;
    const groups = new Map<string, string[]>();
    for (const name of names) {
      if (perCommand && name === 'devnet') {
        logger.info({ service: name }, 'skipped: the devnet keeps its embedded database in memory');
        continue;
      }
      const dir = perCommand ? defaultPgliteDir(COMMAND_OF_SCHEMA[name] ?? name) : '';
      groups.set(dir, [...(groups.get(dir) ?? []), name]);
    }
    for (const [dir, group] of groups) {
      const client = await createDbClient(config, { pgliteDefault: dir || undefined });
      try {
        for (const name of group) {
          const { schema, migrations } = SERVICE_SCHEMAS[name]!;
          const applied = await client.query('cli.migrate', (knex) => migrate(knex, schema, migrations));
          logger.info(
            { service: name, schema, database: client.description, applied },
            applied.length > 0 ? 'migrations applied' : 'already up to date',
          );
        }
      } finally {
        await client.close();
      }
    }
    return 0;
  },
};
