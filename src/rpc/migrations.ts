import type { Migration } from '../common/db/migrations.js';
import { apiKeysMigration } from './keys/migration.js';

/** Tables of the RPC endpoint, in its own schema (`rpc` in production). */
export const rpcMigrations: readonly Migration[] = [
  {
    name: '001_filters_and_rate_limits',
    async up(knex, schema) {
      await knex.schema.withSchema(schema).createTable('filters', (t) => {
        t.text('id').primary();
        t.text('kind').notNullable(); // 'log' | 'block' | 'pending'
        t.jsonb('criteria').notNullable();
        // First block whose entries have not been delivered yet: the cursor every replica shares.
        t.bigInteger('next_block').notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.raw('now()'));
        t.timestamp('last_poll_at', { useTz: true }).notNullable().defaultTo(knex.raw('now()'));
        t.index(['last_poll_at']);
      });
      await knex.schema.withSchema(schema).createTable('rate_limits', (t) => {
        t.text('client').primary();
        t.double('tokens').notNullable();
        t.boolean('allowed').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable();
      });
    },
    async down(knex, schema) {
      await knex.schema.withSchema(schema).dropTableIfExists('rate_limits');
      await knex.schema.withSchema(schema).dropTableIfExists('filters');
    },
  },
  {
    // Live filters are capped per client (RPC_MAX_FILTERS_PER_CLIENT): the count must be shared by replicas.
    name: '002_filters_client',
    async up(knex, schema) {
      await knex.schema.withSchema(schema).alterTable('filters', (t) => {
        t.text('client'); // the rate limiter's identity; null for filters made outside an HTTP request
        t.index(['client', 'last_poll_at']);
      });
    },
    async down(knex, schema) {
      await knex.schema.withSchema(schema).alterTable('filters', (t) => {
        t.dropIndex(['client', 'last_poll_at']);
        t.dropColumn('client');
      });
    },
  },
  apiKeysMigration,
  {
    // eth_newPendingTransactionFilter: the hashes replicas saw arrive at the node, in the order they were
    // recorded (seq, assigned and committed one insert at a time), so a filter's cursor is a seq any
    // replica can read from. A row with a null hash marks a gap: hashes may have been missed there.
    name: '004_pending_transactions',
    async up(knex, schema) {
      await knex.schema.withSchema(schema).createTable('pending_transactions', (t) => {
        t.bigIncrements('seq').primary();
        t.text('hash').unique();
        t.timestamp('seen_at', { useTz: true }).notNullable().defaultTo(knex.raw('now()'));
        t.index(['seen_at']);
      });
    },
    async down(knex, schema) {
      await knex.schema.withSchema(schema).dropTableIfExists('pending_transactions');
    },
  },
  {
    // Each replica's watch of the node beats here, so a watch that starts can tell whether anyone
    // watched while live pending filters waited (if not, hashes may have been missed: a gap).
    name: '005_pending_watchers',
    async up(knex, schema) {
      await knex.schema.withSchema(schema).createTable('pending_watchers', (t) => {
        t.text('id').primary();
        t.timestamp('beat_at', { useTz: true }).notNullable().defaultTo(knex.raw('now()'));
      });
    },
    async down(knex, schema) {
      await knex.schema.withSchema(schema).dropTableIfExists('pending_watchers');
    },
  },
  {
    // Large criteria (up to 1,000 addresses and 1,000 topics) are random hex: Postgres tried to compress each one
    // (pglz) and stored it uncompressed anyway. Stored out of line as they are, a 114 kB filter takes the same space
    // and half the CPU to insert on PGlite (8.4-9.7 -> 4.0-4.8 ms per row); small criteria are stored inline as before.
    name: '006_filters_criteria_uncompressed',
    async up(knex, schema) {
      await knex.raw('alter table ??.filters alter column criteria set storage external', [schema]);
    },
    async down(knex, schema) {
      await knex.raw('alter table ??.filters alter column criteria set storage extended', [schema]);
    },
  },
];
