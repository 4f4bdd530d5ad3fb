import type { Migration } from '../../common/db/migrations.js';

/** Schema `devnet`: the coordinator's progress, so a restart resumes instead of rescanning or re-sending. */
export const devnetMigrations: Migration[] = [
  {
    name: '001_coordinator',
    async up(knex, schema) {
      await knex.schema.withSchema(schema).createTable('l1_messages', (t) => {
        t.bigInteger('message_number').primary();
        t.string('message_hash', 66).notNullable();
        t.string('rolling_hash', 66).notNullable();
        t.bigInteger('l1_block').notNullable();
      });
      await knex.schema.withSchema(schema).createTable('progress', (t) => {
        t.string('key').primary();
        t.text('value').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex.schema.withSchema(schema).createTable('finalizations', (t) => {
        t.bigInteger('final_l2_block').primary();
        t.bigInteger('previous_l2_block').notNullable();
        t.string('state_root', 66).notNullable();
        t.jsonb('merkle_roots').notNullable();
        t.integer('tree_depth').notNullable();
        t.integer('message_count').notNullable();
        t.string('l1_tx_hash', 66).notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
    },
  },
];
