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
  if (await upToDate(knex, schema, migrations)) return [];
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

/**
 * Whether the schema's bookkeeping lists exactly these migrations: then there is nothing to do, and one
 * query says so. knex's migrator spends ~10 statements (bookkeeping and lock tables, the lock taken and
 * released) to find that out, which on a restart of embedded PGlite took 0.4 s of CPU before anything ran.
 * Any other answer (no table yet, a migration missing or unknown) goes to knex, which migrates or refuses.
 */
async function upToDate(knex: Knex, schema: string, migrations: readonly Migration[]): Promise<boolean> {
  const { rows } = (await knex.raw('select to_regclass(?) is not null as present', [
    `"${schema}".knex_migrations`,
  ])) as { rows: { present: boolean }[] };
  if (!rows[0]?.present) return false;
  const applied = (await knex.withSchema(schema).select('name').from('knex_migrations')) as { name: string }[];
  const names = new Set(applied.map((r) => r.name));
  return names.size === migrations.length && migrations.every((m) => names.has(m.name));
}
