import type { Migration } from '../../common/db/migrations.js';

/** API keys of the endpoint's private tier (keys/store.ts), in the endpoint's schema. */
export const apiKeysMigration: Migration = {
  name: '003_api_keys',
  async up(knex, schema) {
    await knex.schema.withSchema(schema).createTable('api_keys', (t) => {
      t.text('id').primary(); // shown by `keys list`, used by `keys revoke`
      t.text('name').notNullable().unique();
      t.text('key_hash').notNullable().unique(); // SHA-256 of the key; the key itself is never stored
      t.text('key_prefix').notNullable();
      t.double('rate_per_second'); // null: the public limit
      t.double('burst');
      t.jsonb('methods'); // null: every method the endpoint serves
      t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.raw('now()'));
      t.timestamp('revoked_at', { useTz: true });
    });
  },
  async down(knex, schema) {
    await knex.schema.withSchema(schema).dropTableIfExists('api_keys');
  },
};
