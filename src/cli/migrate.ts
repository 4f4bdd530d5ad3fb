import type { CommandBody } from './command.js';
import { UsageError } from './command.js';
import { SERVICE_SCHEMAS } from '../services.js';
import { loadDatabaseConfig } from '../common/db/config.js';
import { createDbClient } from '../common/db/client.js';
import { migrate } from '../common/db/migrations.js';
import { readProcessEnv } from '../common/config/process-env.js';
import { createLogger } from '../common/log.js';

export const migrateCommand: CommandBody = {
  usage: '[service]',
  maxPositionals: 1,
  optionHelp: [`service: one of ${Object.keys(SERVICE_SCHEMAS).join(', ') || '(none yet)'}`],
  async run({ positionals }) {
    const names = positionals.length > 0 ? positionals : Object.keys(SERVICE_SCHEMAS);
    for (const name of names) {
      if (!(name in SERVICE_SCHEMAS)) throw new UsageError(`unknown service "${name}"; known: ${Object.keys(SERVICE_SCHEMAS).join(', ') || '(none)'}`);
    }
    const logger = createLogger({ name: 'migrate' });
    const client = await createDbClient(loadDatabaseConfig(readProcessEnv()));
    try {
      for (const name of names) {
        const { schema, migrations } = SERVICE_SCHEMAS[name]!;
        const applied = await client.run((knex) => migrate(knex, schema, migrations));
        logger.info({ service: name, schema, applied }, applied.length > 0 ? 'migrations applied' : 'already up to date');
      }
    } finally {
      await client.close();
    }
    return 0;
  },
};
