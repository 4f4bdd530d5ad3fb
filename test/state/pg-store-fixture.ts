import { afterAll, beforeAll } from 'vitest';
import { migrate } from '../../src/common/db/migrations.js';
import { stateMigrations } from '../../src/state/migrations.js';
import { PgStore } from '../../src/state/pg-store.js';
import { openTestDb } from '../helpers/db.js';

/**
 * A migrated state schema on the test database (PGlite, or PostgreSQL when DATABASE_HOST is set) and a
 * PgStore on it, for one describe block: `store()` is ready inside its tests, and the database is closed after.
 */
export function usePgStore(schemaName: string): {
  store: () => PgStore;
  db: () => Awaited<ReturnType<typeof openTestDb>>;
} {
  let db: Awaited<ReturnType<typeof openTestDb>> | undefined;
  let store: PgStore | undefined;
  beforeAll(async () => {
    db = await openTestDb();
    const schema = db.schema(schemaName);
    await migrate(db.client.knex, schema, stateMigrations);
    store = new PgStore(db.client, schema);
  });
  afterAll(async () => {
    await db?.close();
  });
  return { store: () => store!, db: () => db! };
}
