import { randomBytes } from 'node:crypto';
import { PGLITE_MEMORY, loadDatabaseConfig } from '../../src/common/db/config.js';
import { createDbClient, type DbClient } from '../../src/common/db/client.js';

/**
 * A database for one test file: Postgres when DATABASE_HOST is set (CI runs the suite once that way),
 * else a fresh in-memory PGlite. Each call gets a unique schema prefix so files never share tables.
 */
export async function openTestDb(): Promise<{
  client: DbClient;
  schema: (name: string) => string;
  close(): Promise<void>;
}> {
  // In memory whatever DATABASE_PGLITE_DIR says: files running in parallel never share a PGlite directory.
  const client = await createDbClient(loadDatabaseConfig({ ...process.env, DATABASE_PGLITE_DIR: PGLITE_MEMORY }), {
    poolMax: 4,
  });
  const prefix = `t${randomBytes(4).toString('hex')}`;
  const created: string[] = [];
  return {
    client,
    schema: (name) => {
      const s = `${prefix}_${name}`;
      created.push(s);
      return s;
    },
    async close() {
      if (client.kind === 'postgres') {
        for (const s of created) await client.knex.raw('drop schema if exists ?? cascade', [s]);
      }
      await client.close();
    },
  };
}

export const databaseKind = () => (process.env.DATABASE_HOST ? 'postgres' : 'pglite');
