import { readProcessEnv } from '../common/config/process-env.js';
import { defaultPgliteDir, loadDatabaseConfig } from '../common/db/config.js';
import type { RelayerRepository } from '../relayer/db/repository.js';

/**
 * The relayer's database for an operator command, from DATABASE_*: the relayer's own embedded directory when
 * DATABASE_PGLITE_DIR is unset (refused while a relayer runs on it: PGlite serves one process; stop the relayer
 * first). Checked to hold the relayer's `table` before `use` runs, so a wrong DATABASE_* is named as such.
 */
export async function withRelayerDb<T>(table: string, use: (repository: RelayerRepository) => Promise<T>): Promise<T> {
  const database = loadDatabaseConfig(readProcessEnv());
  const [{ createDbClient }, { RelayerRepository }, { RELAYER_SCHEMA }] = await Promise.all([
    import('../common/db/client.js'),
    import('../relayer/db/repository.js'),
    import('../relayer/db/migrations.js'),
  ]);
  const db = await createDbClient(database, { poolMax: 1, pgliteDefault: defaultPgliteDir('relayer') });
  try {
    const exists = await db.query(`relayer.has_${table}_table`, (knex) =>
      knex.schema.withSchema(RELAYER_SCHEMA).hasTable(table),
    );
    if (!exists)
      throw new Error(
        `this database has no relayer tables (schema "${RELAYER_SCHEMA}"): check DATABASE_*; the relayer creates them when it starts`,
      );
    return await use(new RelayerRepository(db, RELAYER_SCHEMA));
  } finally {
    await db.close();
  }
}
