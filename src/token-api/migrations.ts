import type { Knex } from 'knex';
import type { Migration } from '../common/db/migrations.js';

/** The Postgres schema the token API and its indexer own. */
export const TOKEN_API_SCHEMA = 'token_api';

/** NOTIFY channel of row changes; the payload is the schema, so replicas of several schemas can share it. */
export const READ_MODEL_CHANNEL = 'l2stack_token_api_changes';

/** A table the read model follows: a change number per written row, a notification per writing statement (002). */
async function followChanges(knex: Knex, schema: string, table: string): Promise<void> {
  await knex.raw('alter table ??.?? add column change_seq bigint not null default 0', [schema, table]);
  await knex.raw(`create index ${table}_change_seq_idx on ??.?? (change_seq)`, [schema, table]);
  await knex.raw(
    'create trigger stamp_change before insert or update on ??.?? for each row execute function ??.stamp_change()',
    [schema, table, schema],
  );
  await knex.raw(
    'create trigger notify_change after insert or update or delete on ??.?? for each statement execute function ??.notify_change()',
    [schema, table, schema],
  );
}

export const tokenApiMigrations: readonly Migration[] = [
  {
    name: '001_tokens_pools_prices',
    async up(knex, schema) {
      await knex.schema.withSchema(schema).createTable('tokens', (t) => {
        t.text('address').primary(); // lower-case 0x address
        t.text('name').notNullable();
        t.text('symbol').notNullable();
        t.integer('decimals').notNullable();
        // Raw on-chain totalSupply() and its decimal-adjusted forms: text for output, numeric for ordering.
        t.decimal('total_supply_raw', 78, 0).notNullable().defaultTo(0);
        t.text('total_supply').notNullable().defaultTo('0');
        t.specificType('total_supply_num', 'numeric').notNullable().defaultTo(0);
        t.double('current_price');
        t.timestamp('price_updated_at', { useTz: true });
        t.double('last24h_variation');
        t.double('last24h_variation_abs');
        t.double('fdv');
        t.bigInteger('buys').notNullable().defaultTo(0);
        t.bigInteger('sells').notNullable().defaultTo(0);
        t.bigInteger('swaps').notNullable().defaultTo(0);
        t.boolean('is_possible_spam');
        t.boolean('is_secure').notNullable().defaultTo(false);
        t.boolean('listed').notNullable().defaultTo(false);
        t.text('list_logo'); // logo URL from the token list; null = generated logo
        t.boolean('metadata_ok').notNullable().defaultTo(true);
        t.timestamp('supply_read_at', { useTz: true });
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      // The default listing and the cheapest common orderings, each with the tie-break column.
      await knex.raw(`create index tokens_fdv_idx on ??.tokens (fdv desc nulls last, address)`, [schema]);
      await knex.raw(`create index tokens_swaps_idx on ??.tokens (is_secure, swaps desc, address)`, [schema]);
      await knex.raw(`create index tokens_created_idx on ??.tokens (created_at desc, address)`, [schema]);

      await knex.schema.withSchema(schema).createTable('pools', (t) => {
        t.text('address').primary();
        t.text('kind').notNullable(); // 'v2' | 'v3'
        t.text('factory').notNullable();
        t.text('token0').notNullable();
        t.text('token1').notNullable();
        t.integer('fee');
        t.decimal('reserve0', 78, 0);
        t.decimal('reserve1', 78, 0);
        t.decimal('sqrt_price_x96', 78, 0);
        t.decimal('liquidity', 78, 0);
        t.bigInteger('created_block').notNullable();
      });
      await knex.raw('create index pools_token0_idx on ??.pools (token0)', [schema]);
      await knex.raw('create index pools_token1_idx on ??.pools (token1)', [schema]);

      await knex.schema.withSchema(schema).createTable('swaps', (t) => {
        t.text('tx_hash').notNullable();
        t.integer('log_index').notNullable();
        t.bigInteger('block_number').notNullable();
        t.timestamp('block_time', { useTz: true }).notNullable();
        t.text('pool').notNullable();
        t.text('token_sold').notNullable();
        t.text('token_bought').notNullable();
        t.unique(['tx_hash', 'log_index'], { indexName: 'swaps_tx_log_unique' });
      });

      // One row per token and UTC hour: the last observation in that hour.
      await knex.schema.withSchema(schema).createTable('prices', (t) => {
        t.text('token').notNullable();
        t.timestamp('hour', { useTz: true }).notNullable();
        t.double('price').notNullable();
        t.timestamp('observed_at', { useTz: true }).notNullable();
        t.primary(['token', 'hour']);
      });
      await knex.raw('create index prices_observed_idx on ??.prices (token, observed_at)', [schema]);

      await knex.schema.withSchema(schema).createTable('cursors', (t) => {
        t.text('name').primary();
        t.bigInteger('block').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
    },
    async down(knex, schema) {
      for (const table of ['cursors', 'prices', 'swaps', 'pools', 'tokens'])
        await knex.schema.withSchema(schema).dropTableIfExists(table);
    },
  },
  {
    // The replicas' in-memory read model follows the database through these: every written token or price
    // row gets the next change number (so a replica loads only rows newer than what it holds), and every
    // writing statement notifies the schema's name on commit (so replicas load at once instead of polling).
    // Triggers, not indexer code, so any writer (the indexer, an operator's fix, a test's seed) is followed.
    name: '002_read_model_change_feed',
    async up(knex, schema) {
      await knex.raw('create sequence ??.change_seq', [schema]);
      await knex.raw(
        `create function ??.stamp_change() returns trigger language plpgsql as $$
         begin new.change_seq := nextval(format('%I.change_seq', tg_table_schema)); return new; end $$`,
        [schema],
      );
      await knex.raw(
        `create function ??.notify_change() returns trigger language plpgsql as $$
         begin perform pg_notify('${READ_MODEL_CHANNEL}', tg_table_schema); return null; end $$`,
        [schema],
      );
      for (const table of ['tokens', 'prices']) await followChanges(knex, schema, table);
    },
    async down(knex, schema) {
      for (const table of ['tokens', 'prices']) {
        await knex.raw('drop trigger if exists stamp_change on ??.??', [schema, table]);
        await knex.raw('drop trigger if exists notify_change on ??.??', [schema, table]);
        await knex.raw('alter table ??.?? drop column if exists change_seq', [schema, table]);
      }
      await knex.raw('drop function if exists ??.stamp_change()', [schema]);
      await knex.raw('drop function if exists ??.notify_change()', [schema]);
      await knex.raw('drop sequence if exists ??.change_seq', [schema]);
    },
  },
  {
    // Auditable prices (getTokenPriceSources, getTokenCandles): the block and time of each pool's state, the
    // explanation of each token's current price, and hourly candles. Both new tables feed the read model
    // like tokens and prices (change numbers and notifications).
    name: '003_price_sources_candles',
    async up(knex, schema) {
      await knex.raw('alter table ??.pools add column state_block bigint, add column state_time timestamptz', [schema]);
      await knex.schema.withSchema(schema).createTable('price_sources', (t) => {
        t.text('token').primary();
        t.timestamp('observed_at', { useTz: true }).notNullable();
        t.bigInteger('block_number');
        t.jsonb('detail').notNullable();
      });
      // One row per token and UTC hour; `area` is the integral of the price over [covered_from, last_at] in price × ms.
      await knex.schema.withSchema(schema).createTable('candles', (t) => {
        t.text('token').notNullable();
        t.timestamp('hour', { useTz: true }).notNullable();
        t.double('open').notNullable();
        t.double('high').notNullable();
        t.double('low').notNullable();
        t.double('close').notNullable();
        t.double('volume_usd').notNullable().defaultTo(0);
        t.double('area').notNullable();
        t.timestamp('covered_from', { useTz: true }).notNullable();
        t.timestamp('last_at', { useTz: true }).notNullable();
        t.primary(['token', 'hour']);
      });
      for (const table of ['price_sources', 'candles']) await followChanges(knex, schema, table);
    },
    async down(knex, schema) {
      for (const table of ['candles', 'price_sources']) await knex.schema.withSchema(schema).dropTableIfExists(table);
      await knex.raw('alter table ??.pools drop column if exists state_block, drop column if exists state_time', [
        schema,
      ]);
    },
  },
];
