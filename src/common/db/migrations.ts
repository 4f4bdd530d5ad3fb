import type { Knex } from 'knex';

/** A migration written in TypeScript; `up` receives knex bound to nothing: qualify tables with `schema`. */
export interface Migration {
  name: string;
  up(knex: Knex, schema: string): Promise<void>;
  down?(knex: Knex, schema: string): Promise<void>;
}

/** How long a start waits for another process migrating the same schema (a bound on every lock the migration takes). */
export const MIGRATION_LOCK_WAIT_MS = 120_000;

/**
 * Runs a service's migrations inside its own Postgres schema, with knex's bookkeeping table in that schema
 * too, so services migrate independently and can share one database (or one PGlite) safely.
 *
 * Processes that start together on a new schema (replicas behind a load balancer, RPC_WORKERS) migrate one at a
 * time: all of it runs in one transaction that first takes an advisory lock named after the schema. knex's own lock
 * does not serialize them: it creates its tables and inserts its lock row by check-then-act, so two first starts
 * together failed ("relation already exists") or left two lock rows, after which every start failed with "Migration
 * table is already locked". Under the advisory lock no other l2stack process is migrating, so a lock row still set
 * (a migrator that died: its transaction, and so its migrations, rolled back) or a second row is stale: reset.
 */
export async function migrate(
  knex: Knex,
  schema: string,
  migrations: readonly Migration[],
  { lockWaitMs = MIGRATION_LOCK_WAIT_MS }: { lockWaitMs?: number } = {},
): Promise<string[]> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name "${schema}"`);
  if (await upToDate(knex, schema, migrations)) return [];
  const source: Knex.MigrationSource<Migration> = {
    getMigrations: async () => [...migrations],
    getMigrationName: (m) => m.name,
    getMigration: async (m) => ({
      up: (k: Knex) => m.up(k, schema),
      down: (k: Knex) => (m.down ? m.down(k, schema) : Promise.resolve()),
    }),
  };
  try {
    return await knex.transaction(async (trx) => {
      await trx.raw(`set local lock_timeout = ${Math.max(1, Math.round(lockWaitMs))}`);
      await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`l2stack migrate ${schema}`]);
      await trx.raw('create schema if not exists ??', [schema]);
      const bookkeeping = { schemaName: schema, tableName: 'knex_migrations' };
      // Stale under the advisory lock (see above): knex's own repair puts back one unlocked row.
      await trx.migrate.forceFreeMigrationsLock(bookkeeping);
      const [, applied] = (await trx.migrate.latest({
        ...bookkeeping,
        migrationSource: source,
        disableMigrationsListValidation: false,
      })) as [number, string[]];
      return applied;
    });
  } catch (err) {
    if ((err as { code?: string }).code !== '55P03') throw err;
    throw new Error(
      `migrating schema "${schema}": waited ${lockWaitMs / 1_000} s for a lock another process holds (another migration of it, or a session holding its tables): ${(err as Error).message}`,
      { cause: err },
    );
  }
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
