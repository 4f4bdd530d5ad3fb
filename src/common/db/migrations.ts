import type { Knex } from 'knex';

/** A migration written in TypeScript; `up` receives knex bound to nothing: qualify tables with `schema`. */
export interface Migration {
  name: string;
  up(knex: Knex, schema: string): Promise<void>;
  down?(knex: Knex, schema: string): Promise<void>;
}

/**
 * Runs a service's migrations inside its own Postgres schema, with knex's bookkeeping table in that schema
 * too, so services migrate independently and can share one database (or one PGlite) safely.
 */
export async function migrate(knex: Knex, schema: string, migrations: readonly Migration[]): Promise<string[]> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name "${schema}"`);
  await knex.raw('create schema if not exists ??', [schema]);
  const source: Knex.MigrationSource<Migration> = {
    getMigrations: async () => [...migrations],
    getMigrationName: (m) => m.name,
    getMigration: async (m) => ({
      up: (k: Knex) => m.up(k, schema),
      down: (k: Knex) => (m.down ? m.down(k, schema) : Promise.resolve()),
    }),
  };
  const [, applied] = (await knex.migrate.latest({
    migrationSource: source,
    schemaName: schema,
    tableName: 'knex_migrations',
    disableMigrationsListValidation: false,
  })) as [number, string[]];
  return applied;
}
