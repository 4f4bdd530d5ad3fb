import type { Migration } from '../common/db/migrations.js';

/**
 * Schema of the state manager. nodes and keys are append-only version tables: a row at (tree, pos, block)
 * is the value from that block on (value null = cleared), so "latest version ≤ N" answers for block N.
 * Block numbers are int8; tree is '' (bytea of length 0) for the account tree, else the account address.
 */
/** The state manager's Postgres schema. */
export const STATE_SCHEMA = 'state';

export const stateMigrations: readonly Migration[] = [
  {
    name: '001_state_tree',
    async up(knex, schema) {
      await knex.raw(
        `
        create table ??.nodes (
          tree bytea not null,
          pos bigint not null,
          block bigint not null,
          value bytea,
          primary key (tree, pos, block)
        )`,
        [schema],
      );
      await knex.raw('create index nodes_block on ??.nodes (block)', [schema]);
      await knex.raw(
        `
        create table ??.keys (
          tree bytea not null,
          hkey bytea not null,
          block bigint not null,
          leaf_index bigint,
          primary key (tree, hkey, block)
        )`,
        [schema],
      );
      await knex.raw('create index keys_block on ??.keys (block)', [schema]);
      await knex.raw(
        `
        create table ??.blocks (
          number bigint primary key,
          hash text not null,
          parent_hash text not null,
          root text not null,
          applied_at timestamptz not null default now()
        )`,
        [schema],
      );
      await knex.raw('create table ??.meta (key text primary key, value text not null)', [schema]);
      await knex.raw(
        `
        create table ??.finalizations (
          l2_block bigint primary key,
          state_root text not null,
          l1_block bigint not null,
          l1_tx_hash text not null
        )`,
        [schema],
      );
    },
    async down(knex, schema) {
      for (const t of ['finalizations', 'meta', 'blocks', 'keys', 'nodes'])
        await knex.raw('drop table if exists ??.??', [schema, t]);
    },
  },
];
