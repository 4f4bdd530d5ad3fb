import { randomBytes } from 'node:crypto';
import { PGLITE_MEMORY, loadDatabaseConfig } from '../../src/common/db/config.js';
import { createDbClient, type DbClient } from '../../src/common/db/client.js';

/**
 * In-memory PGlite databases a closed test database gave back, when the project sets L2STACK_TEST_PGLITE_REUSE
 * (the fast and slow tiers): a worker runs its files one after another in one process (isolate: false), and
 * starting PGlite took 0.5-1.1 s of CPU each (the fast tier: 81 -> 44 s of CPU, 2026-11-29). A reused one holds nothing
 * of its previous user's (the schemas are dropped, as on PostgreSQL, where every file shares one database); one in use
 * is never shared (PGlite has one connection).
 */
const idle: DbClient[] = [];

/**
 * A database for one test file: Postgres when DATABASE_HOST is set (CI runs the suite once that way),
 * else an in-memory PGlite (new, or given back as above). Each call gets a unique schema prefix so files never
 * share tables.
 */
export async function openTestDb(): Promise<{
  client: DbClient;
  schema: (name: string) => string;
  close(): Promise<void>;
}> {
  // In memory whatever DATABASE_PGLITE_DIR says: files running in parallel never share a PGlite directory.
  const config = loadDatabaseConfig({ ...process.env, DATABASE_PGLITE_DIR: PGLITE_MEMORY });
  const reuse = config.kind === 'pglite' && process.env.L2STACK_TEST_PGLITE_REUSE === '1';
  const client = (reuse && idle.pop()) || (await createDbClient(config, { poolMax: 4 }));
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
      if (client.kind === 'postgres' || reuse) {
        for (const s of created) await client.knex.raw('drop schema if exists ?? cascade', [s]);
      }
      if (reuse) idle.push(client);
      else await client.close();
    },
  };
}

export const databaseKind = () => (process.env.DATABASE_HOST ? 'postgres' : 'pglite');
