import type { Knex } from 'knex';
import type { DbClient } from '../../common/db/client.js';
import type { Direction } from '../config.js';
import { hostname } from 'node:os';
import { ChangeFeed } from './change-feed.js';
import { RelayerReads } from './reads.js';
import type { FinalizationRow, MessagePatch, MessageRow, NewMessage } from './rows.js';
import { Status, type MessageStatus } from '../message/status.js';
import { FINAL } from '../message/transitions.js';
import { applyTransition, enterMessages, type StatusChange, type StatusChangeOptions } from '../message/writer.js';

export type { FinalizationRow, HistoryRow, MessagePatch, MessageRow, NewMessage } from './rows.js';

const json = (v: unknown) => JSON.stringify(v);

/**
 * Data access of the relayer; every table qualified with the relayer's schema. The reads are RelayerReads'; this
 * class adds the writes, counts them (the change feed's reads skip the database while nothing was written), and
 * writes every status through the one writer (src/relayer/message/writer.ts). Nothing else holds the database
 * handle: every write goes through write(), so none can forget to wake the loops that wait for it.
 */
export class RelayerRepository extends RelayerReads {
  /** Writes this repository made (counted once each settled, committed or not). */
  private writes = 0;
  private readonly feed: ChangeFeed;

  /**
   * `actor`: who this repository's status changes are recorded as in the history; by default this relayer
   * instance (host and process), so the two instances of an HA pair are told apart.
   */
  constructor(
    db: DbClient,
    schema: string,
    readonly actor: string = `relayer ${hostname()}:${process.pid}`,
  ) {
    super(db, schema);
    this.feed = new ChangeFeed(db, schema);
  }

  private readonly enteredListeners = new Set<(status: MessageStatus) => void>();

  /**
   * Calls `listener` with each status a write of this process moved messages into, once the write settled (the
   * pipeline's hand-offs: src/relayer/pipeline/waker.ts). Returns the unsubscribe.
   */
  onEntered(listener: (status: MessageStatus) => void): () => void {
    this.enteredListeners.add(listener);
    return () => this.enteredListeners.delete(listener);
  }

  /**
   * The one way anything writes to the relayer's tables: runs `fn` as the query `name` and, once it settled
   * (committed or not), counts the write for the change feed and wakes the loops waiting for the statuses it
   * `entered` (pass the statuses its transitions moved messages into, when a loop reads them). The database
   * handle itself stays inside this class.
   */
  write<T>(name: string, fn: (knex: Knex) => Promise<T>, entered: readonly MessageStatus[] = []): Promise<T> {
    return this.settled(() => this.db.query(name, fn), entered);
  }

  private async settled<T>(fn: () => Promise<T>, entered: readonly MessageStatus[]): Promise<T> {
    try {
      return await fn();
    } finally {
      this.writes++;
      for (const status of entered) for (const listener of this.enteredListeners) listener(status);
    }
  }

  /**
   * Stores a window of MessageSent events and the listener's new resume point in one transaction, so a
   * restart neither skips nor duplicates a message. Known (hash, direction) pairs are left untouched.
   */
  async storeMessages(messages: NewMessage[], cursor: { name: string; lastBlock: number }): Promise<number> {
    if (messages.length === 0) {
      await this.db.query('relayer.set_cursor', (knex) => this.setCursorIn(knex, cursor.name, cursor.lastBlock));
      return 0;
    }
    return this.write(
      'relayer.store_messages',
      (knex) =>
        knex.transaction(async (trx) => {
          const inserted = await enterMessages(trx, this.schema, messages, this.actor);
          await this.setCursorIn(trx, cursor.name, cursor.lastBlock);
          return inserted;
        }),
      [...new Set(messages.map((m) => m.status))],
    );
  }

  /** The due rows of a pipeline loop, read from the change feed (see ChangeFeed.due). */
  dueChanged(
    direction: Direction,
    statuses: readonly MessageStatus[],
    limit: number,
    maxAgeMs: number,
  ): Promise<MessageRow[]> {
    return this.feed.due(direction, statuses, limit, maxAgeMs, this.writes);
  }

  async setCursorIn(knex: Knex, name: string, lastBlock: number): Promise<void> {
    await this.table(knex, 'cursor')
      .insert({ name, last_block: lastBlock, updated_at: knex.fn.now() })
      .onConflict('name')
      .merge(['last_block', 'updated_at']);
  }

  /**
   * Moves a message to `to` only if it is still in one of `from` (so two workers, or a worker and an
   * operator, never both act on one message), and records the change in the status history: one statement.
   */
  async transitionIn(
    knex: Knex,
    id: string,
    from: readonly MessageStatus[],
    to: MessageStatus,
    patch: MessagePatch = {},
    reason: string | null = null,
    options: StatusChangeOptions = {},
  ): Promise<boolean> {
    return (await this.transitionManyIn(knex, [{ id, patch }], from, to, reason, options)).size > 0;
  }

  transition(
    id: string,
    from: readonly MessageStatus[],
    to: MessageStatus,
    patch: MessagePatch = {},
    reason: string | null = null,
  ): Promise<boolean> {
    return this.write('relayer.transition', (knex) => this.transitionIn(knex, id, from, to, patch, reason), [to]);
  }

  /** transition() of many messages in one statement; returns the ids moved. */
  transitionMany(
    changes: readonly StatusChange[],
    from: readonly MessageStatus[],
    to: MessageStatus,
    reason: string | null = null,
  ): Promise<Set<string>> {
    if (changes.length === 0) return Promise.resolve(new Set());
    return this.write('relayer.transition_many', (knex) => this.transitionManyIn(knex, changes, from, to, reason), [
      to,
    ]);
  }

  /** transitionMany() in the caller's transaction (a write(), which counts it and wakes once settled). */
  transitionManyIn(
    knex: Knex,
    changes: readonly StatusChange[],
    from: readonly MessageStatus[],
    to: MessageStatus,
    reason: string | null = null,
    options: StatusChangeOptions = {},
  ): Promise<Set<string>> {
    return applyTransition(knex, this.schema, changes, from, to, reason, { actor: this.actor, ...options });
  }

  /**
   * Records a replacement (fee bump or cancellation) of the PENDING transaction `previousHash`, only if it
   * is still the message's current one.
   */
  async replaceClaimTx(
    id: string,
    previousHash: string,
    patch: MessagePatch & { failure_reason: string },
    counts: { bump: boolean },
  ): Promise<boolean> {
    return this.write('relayer.replace_claim_tx', async (knex) => {
      const n: unknown = await this.table(knex, 'message')
        .where({ id, status: Status.PENDING, claim_tx_hash: previousHash })
        .update({
          ...patch,
          bumps: counts.bump ? knex.raw('bumps + 1') : knex.raw('bumps'),
          retries: counts.bump ? knex.raw('retries + 1') : knex.raw('retries'),
          claim_tx_created_at: knex.fn.now(),
          updated_at: knex.fn.now(),
        });
      return Number(n) > 0;
    });
  }

  /** Updates fields without changing the status (failure reason, retry time). */
  async annotate(
    id: string,
    status: MessageStatus,
    patch: MessagePatch & { failure_reason?: string | null },
  ): Promise<void> {
    await this.write('relayer.annotate', (knex) =>
      this.table(knex, 'message')
        .where({ id, status })
        .update({ ...patch, updated_at: knex.fn.now() }),
    );
  }

  // --- finalizations (L2→L1 anchoring) -----------------------------------------------------------------

  async storeFinalizations(
    rows: Omit<FinalizationRow, 'id' | 'leaves'>[],
    cursor: { name: string; lastBlock: number },
  ): Promise<void> {
    await this.write('relayer.store_finalizations', (knex) =>
      knex.transaction(async (trx) => {
        if (rows.length > 0) {
          await this.table(trx, 'finalization')
            .insert(
              rows.map((r) => ({
                ...r,
                merkle_roots: json(r.merkle_roots),
                messaging_blocks: json(r.messaging_blocks),
              })),
            )
            .onConflict(['contract_address', 'l1_tx_hash'])
            .ignore();
        }
        await this.setCursorIn(trx, cursor.name, cursor.lastBlock);
      }),
    );
  }

  async saveLeaves(id: string, leaves: string[]): Promise<void> {
    await this.write('relayer.save_leaves', (knex) =>
      this.table(knex, 'finalization')
        .where({ id })
        .update({ leaves: json(leaves) }),
    );
  }

  /** The cleaner: final-status messages older than `days` (never one that still needs work). */
  async deleteFinalOlderThan(days: number): Promise<number> {
    // `returning` gives the deleted rows on both drivers (a bare delete's result differs between them).
    const rows = await this.write('relayer.delete_final_older_than', (knex) =>
      this.table(knex, 'message')
        .whereIn('status', FINAL)
        .where('updated_at', '<', knex.raw(`now() - make_interval(days => ?)`, [days]))
        .delete(['id']),
    );
    return (rows as unknown[]).length;
  }
}
