import type { Knex } from 'knex';
import type { Migration } from '../../common/db/migrations.js';
import { MESSAGE_STATUSES, Status } from '../message/status.js';

export const RELAYER_SCHEMA = 'relayer';

const list = (values: readonly string[]) => values.map((v) => `'${v}'`).join(', ');

/** 0001's message table, its checks and the pipeline's indexes. */
async function createMessageTable(knex: Knex, schema: string): Promise<void> {
  await knex.schema.withSchema(schema).createTable('message', (t) => {
    t.bigIncrements('id').primary();
    t.text('message_hash').notNullable();
    t.text('direction').notNullable();
    t.text('message_sender').notNullable();
    t.text('destination').notNullable();
    t.decimal('fee', 78, 0).notNullable();
    t.decimal('value', 78, 0).notNullable();
    t.decimal('message_nonce', 78, 0).notNullable();
    t.text('calldata').notNullable();
    t.text('contract_address').notNullable();
    t.bigInteger('sent_block_number').notNullable();
    t.text('sent_tx_hash').notNullable();
    t.integer('sent_log_index').notNullable();
    t.text('status').notNullable();
    t.text('failure_reason');
    // Claim transaction of the current attempt.
    t.text('claim_tx_hash');
    t.bigInteger('claim_tx_nonce');
    t.decimal('claim_gas_limit', 78, 0);
    t.decimal('claim_max_fee_per_gas', 78, 0);
    t.decimal('claim_max_priority_fee_per_gas', 78, 0);
    t.text('claim_tx_raw');
    t.timestamp('claim_tx_created_at', { useTz: true });
    t.boolean('is_sponsored').notNullable().defaultTo(false);
    t.integer('retries').notNullable().defaultTo(0);
    t.integer('cycles').notNullable().defaultTo(0);
    t.timestamp('retry_after', { useTz: true });
    t.integer('compressed_transaction_size');
    // L2→L1 proof, built once per finalization.
    t.text('merkle_root');
    t.integer('leaf_index');
    t.jsonb('proof');
    t.timestamp('anchored_at', { useTz: true });
    t.timestamp('claimed_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['message_hash', 'direction'], { indexName: 'message_hash_direction_unique' });
  });
  const m = `${schema}.message`;
  await knex.raw(
    `alter table ${m} add constraint message_direction_check check (direction in ('L1_TO_L2', 'L2_TO_L1'))`,
  );
  await knex.raw(`alter table ${m} add constraint message_status_check check (status in (${list(MESSAGE_STATUSES)}))`);
  // The pipeline's queries: work by (direction, status) in block order; receipts by hash; API newest first.
  await knex.raw(
    `create index message_direction_status_idx on ${m} (direction, status, sent_block_number, message_nonce)`,
  );
  await knex.raw(`create index message_claim_tx_hash_idx on ${m} (claim_tx_hash) where claim_tx_hash is not null`);
  await knex.raw(`create index message_sent_block_idx on ${m} (direction, contract_address, sent_block_number)`);
  await knex.raw(`create index message_created_at_idx on ${m} (created_at desc, message_hash, direction)`);
  await knex.raw(`create index message_updated_at_idx on ${m} (status, updated_at)`);
}

/**
 * Hand-written migrations (schema-qualified; run by `migrate()` in the relayer's own schema). Money and uint256 fields
 * are numeric(78,0); timestamps are timestamptz set by the database clock so several relayer processes agree on "now".
 */
export const relayerMigrations: Migration[] = [
  {
    name: '0001_messages',
    async up(knex, schema) {
      await createMessageTable(knex, schema);

      await knex.schema.withSchema(schema).createTable('message_status_history', (t) => {
        t.bigIncrements('id').primary();
        t.bigInteger('message_id').notNullable().references('id').inTable(`${schema}.message`).onDelete('CASCADE');
        t.text('status').notNullable();
        t.text('reason');
        t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['message_id', 'id'], 'message_status_history_message_idx');
      });

      // One row per L1 finalization transaction (BlocksFinalized + its L2MerkleRootAdded and L2MessagingBlockAnchored
      // logs), indexed once; `leaves` caches the verified message hashes.
      await knex.schema.withSchema(schema).createTable('finalization', (t) => {
        t.bigIncrements('id').primary();
        t.text('contract_address').notNullable();
        t.text('l1_tx_hash').notNullable();
        t.bigInteger('l1_block_number').notNullable();
        t.bigInteger('first_l2_block').notNullable();
        t.bigInteger('final_l2_block').notNullable();
        t.integer('tree_depth');
        t.jsonb('merkle_roots').notNullable();
        t.jsonb('messaging_blocks').notNullable();
        t.jsonb('leaves');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.unique(['contract_address', 'l1_tx_hash'], { indexName: 'finalization_tx_unique' });
        t.index(['contract_address', 'first_l2_block', 'final_l2_block'], 'finalization_range_idx');
      });

      // Where each log scanner stopped (listener per direction, finalization indexer): resume point.
      await knex.schema.withSchema(schema).createTable('cursor', (t) => {
        t.text('name').primary();
        t.bigInteger('last_block').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });

      // Next nonce per (chain, signer), leased under a row lock so two processes never share a nonce.
      await knex.schema.withSchema(schema).createTable('signer_nonce', (t) => {
        t.text('chain_id').notNullable();
        t.text('address').notNullable();
        t.bigInteger('next_nonce').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['chain_id', 'address']);
      });
    },
    async down(knex, schema) {
      for (const table of ['signer_nonce', 'cursor', 'finalization', 'message_status_history', 'message']) {
        await knex.schema.withSchema(schema).dropTableIfExists(table);
      }
    },
  },
  {
    name: '0002_submission_lifecycle',
    async up(knex, schema) {
      // Fee bumps sent in the current submission cycle, and whether the current transaction (claim_tx_*) is the claim
      // or the cancellation that ends the cycle (same nonce, zero value, to ourselves).
      await knex.schema.withSchema(schema).alterTable('message', (t) => {
        t.integer('bumps').notNullable().defaultTo(0);
        t.text('claim_tx_kind').notNullable().defaultTo('claim');
      });
    },
    async down(knex, schema) {
      await knex.schema.withSchema(schema).alterTable('message', (t) => {
        t.dropColumn('bumps');
        t.dropColumn('claim_tx_kind');
      });
    },
  },
  {
    name: '0003_claim_signer',
    async up(knex, schema) {
      // Which signer address sent the current claim (several keys per direction with *_SIGNER_PRIVATE_KEYS), so
      // receipts, fee bumps, cancellations and rebroadcasts use that key's nonce sequence. Null on rows written before:
      // those were sent by the direction's single key (*_SIGNER_PRIVATE_KEY), the default.
      await knex.schema.withSchema(schema).alterTable('message', (t) => {
        t.text('claim_signer');
      });
    },
    async down(knex, schema) {
      await knex.schema.withSchema(schema).alterTable('message', (t) => {
        t.dropColumn('claim_signer');
      });
    },
  },
  {
    name: '0004_change_feed',
    async up(knex, schema) {
      // The change feed of the pipeline's loops (RelayerRepository.dueChanged): every insert or update of a message
      // stamps it with the id of the transaction that wrote it, by trigger, so no writer (this relayer, another
      // replica, an operator's SQL) can forget to. A loop then reads only the rows written by transactions that were
      // still running or had not started at its last read (xid >= that read's snapshot xmin): exact whatever the commit
      // order, which a sequence or a timestamp is not.
      const m = `${schema}.message`;
      await knex.raw(`alter table ${m} add column change_xid xid8`);
      await knex.raw(`update ${m} set change_xid = pg_current_xact_id()`);
      await knex.raw(`alter table ${m} alter column change_xid set not null`);
      await knex.raw(
        `create function ${schema}.message_note_change() returns trigger language plpgsql as $$ begin new.change_xid := pg_current_xact_id(); return new; end $$`,
      );
      await knex.raw(
        `create trigger message_note_change before insert or update on ${m} for each row execute function ${schema}.message_note_change()`,
      );
      await knex.raw(`create index message_change_idx on ${m} (direction, change_xid)`);
      // The earliest retry time still to come, read with each full page: only the few rows that wait have one.
      await knex.raw(`create index message_retry_after_idx on ${m} (retry_after) where retry_after is not null`);
    },
    async down(knex, schema) {
      const m = `${schema}.message`;
      await knex.raw(`drop trigger if exists message_note_change on ${m}`);
      await knex.raw(`drop function if exists ${schema}.message_note_change()`);
      await knex.raw(`drop index if exists ${schema}.message_retry_after_idx`);
      await knex.raw(`alter table ${m} drop column if exists change_xid`);
    },
  },
  {
    name: '0005_chain_pin',
    async up(knex, schema) {
      // The chains this database belongs to, one row per layer, written on the first start and compared on every later
      // one (src/relayer/db/chain-pin.ts): signed claims, nonces, cursors and proofs mean nothing elsewhere.
      await knex.schema.withSchema(schema).createTable('chain_pin', (t) => {
        t.text('layer').primary();
        t.text('chain_id').notNullable();
        t.text('genesis_hash').notNullable();
        t.text('contract_address').notNullable();
        t.timestamp('pinned_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
    },
    async down(knex, schema) {
      await knex.schema.withSchema(schema).dropTableIfExists('chain_pin');
    },
  },
  {
    name: '0006_history_detail',
    async up(knex, schema) {
      // Each history line says the whole move (issue 25): where from, the claim transaction the row held after it, who
      // made it (a relayer instance or an admin). Rows written before keep nulls there.
      await knex.schema.withSchema(schema).alterTable('message_status_history', (t) => {
        t.text('from_status');
        t.text('claim_tx_hash');
        t.bigInteger('claim_tx_nonce');
        t.text('signer');
        t.text('actor');
      });
      // Re-simulations of a NON_EXECUTABLE claim so far: its backoff doubles with each (src/relayer/claim/claiming.ts).
      await knex.schema.withSchema(schema).alterTable('message', (t) => {
        t.integer('resimulations').notNullable().defaultTo(0);
      });
      // ABANDONED: given up by an operator (POST /messages/{hash}/abandon), never claimed.
      const m = `${schema}.message`;
      await knex.raw(`alter table ${m} drop constraint message_status_check`);
      await knex.raw(
        `alter table ${m} add constraint message_status_check check (status in (${list(MESSAGE_STATUSES)}))`,
      );
    },
    async down(knex, schema) {
      const m = `${schema}.message`;
      await knex.raw(`alter table ${m} drop constraint message_status_check`);
      await knex.raw(
        `alter table ${m} add constraint message_status_check check (status in (${list(MESSAGE_STATUSES.filter((s) => s !== Status.ABANDONED))}))`,
      );
      await knex.schema.withSchema(schema).alterTable('message', (t) => t.dropColumn('resimulations'));
      await knex.schema.withSchema(schema).alterTable('message_status_history', (t) => {
        for (const c of ['from_status', 'claim_tx_hash', 'claim_tx_nonce', 'signer', 'actor']) t.dropColumn(c);
      });
    },
  },
];
