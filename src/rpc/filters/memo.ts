import type { DbClient } from '../../common/db/client.js';
import type { Logger } from '../../common/log.js';
import type { Filter as LogCriteria } from '../../../generated/rpc/methods.js';

/** What a filter watches: logs, new blocks, or pending transactions (the row's `kind`). */
export type FilterKind = 'log' | 'block' | 'pending';

/** What this process last confirmed about a filter row, and when (its local clock). */
export interface KnownFilter {
  id: string;
  kind: FilterKind;
  criteria: LogCriteria;
  /** A lower bound of the shared cursor: cursors only move forward. */
  nextBlock: bigint;
  confirmedAt: number;
}

/** Most filters one process remembers; the least recently polled are forgotten first. */
const MAX_KNOWN = 10_000;

/**
 * Filters this process has read or moved recently, so an empty poll needs neither the database nor the node. It is safe
 * for exactly-once delivery because answering [] never delivers anything, and a cursor read here is a lower bound (only
 * compare-and-set moves it, forward): if it is past the head, nothing is due whoever polled meanwhile; when blocks are
 * due, the poll still goes through the compare-and-set. An entry is trusted for a tenth of RPC_FILTER_TTL_SECONDS after
 * the row was last read or written: the row had last_poll_at at least that recent, so it cannot have expired.
 * Uninstalls are seen at once: in this process directly, and from other processes on PostgreSQL by LISTEN/NOTIFY; while
 * that listener is not connected nothing is trusted and every poll reads the row.
 */
export class FilterMemo {
  private readonly known = new Map<string, KnownFilter>();
  /** Filters forgotten because they were uninstalled or not found, with the time. */
  private readonly removed = new Map<string, number>();
  private listening: boolean;
  /** The tail of each filter's queue of polls in this process (polls of one filter run one at a time). */
  private readonly polls = new Map<string, Promise<void>>();
  /** Stores using this memo, and the listener they share (started by the first, stopped by the last). */
  users = 0;
  stopListener: (() => Promise<void>) | undefined;

  constructor(
    readonly trustMs: number,
    /** PGlite: only this process can open the database, so no listener is needed. */
    private readonly needsListener: boolean,
  ) {
    this.listening = !needsListener;
  }

  get(id: string, now = Date.now()): KnownFilter | undefined {
    if (!this.listening) return undefined;
    const k = this.known.get(id);
    if (!k) return undefined;
    if (now - k.confirmedAt >= this.trustMs) {
      this.known.delete(id);
      return undefined;
    }
    return k;
  }

  remember(k: KnownFilter): void {
    // A row read just before an uninstall was announced must not bring the filter back.
    const gone = this.removed.get(k.id);
    if (gone !== undefined && k.confirmedAt - gone < this.trustMs) return;
    this.known.delete(k.id);
    this.known.set(k.id, k);
    if (this.known.size > MAX_KNOWN) this.known.delete(this.known.keys().next().value!);
  }

  /** Not trusted any more (a compare-and-set lost): the next poll reads the row. */
  drop(id: string): void {
    this.known.delete(id);
  }

  /** Uninstalled or gone: not remembered again from a read that raced with the removal. */
  forget(id: string, now = Date.now()): void {
    this.known.delete(id);
    this.removed.delete(id);
    this.removed.set(id, now);
    // Tombstones older than the trust window are of no use any more (the map is ordered by time).
    for (const [old, at] of this.removed) {
      if (now - at < this.trustMs && this.removed.size <= MAX_KNOWN) break;
      this.removed.delete(old);
    }
  }

  /** Whether a poll of this filter is in flight in this process. */
  polling(id: string): boolean {
    return this.polls.has(id);
  }

  /**
   * Runs `poll` after every poll of the same filter this process started before it. Two polls of one filter at once
   * would both fetch the same entries and race for the compare-and-set, and the loser would read the row and fetch
   * again; one after the other, the second finds the cursor the first remembered (usually past the head: an answer with
   * no I/O). The queue holds only polls in flight.
   */
  async oneAtATime<T>(id: string, poll: () => Promise<T>): Promise<T> {
    const before = this.polls.get(id);
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    const tail = before === undefined ? mine : before.then(() => mine);
    this.polls.set(id, tail);
    try {
      if (before !== undefined) await before;
      return await poll();
    } finally {
      done();
      if (this.polls.get(id) === tail) this.polls.delete(id);
    }
  }

  setListening(on: boolean): void {
    if (!this.needsListener) return;
    if (!on) this.known.clear();
    this.listening = on;
  }
}

/** One memo per database and filter table in a process, shared by every replica in it (tests run two). */
const memos = new WeakMap<DbClient, Map<string, FilterMemo>>();

export function memoFor(db: DbClient, table: string, ttlSeconds: number): FilterMemo {
  let byTable = memos.get(db);
  if (!byTable) memos.set(db, (byTable = new Map()));
  let memo = byTable.get(table);
  if (!memo) byTable.set(table, (memo = new FilterMemo(ttlSeconds * 100, db.kind !== 'pglite')));
  return memo;
}

/** Joins the memo of `table`, starting its uninstall listener for the first user; returns the leave function. */
export function joinMemo(db: DbClient, table: string, memo: FilterMemo, logger: Logger): () => Promise<void> {
  memo.users++;
  if (memo.users === 1) memo.stopListener = listenForRemovals(db, table, memo, logger);
  let left = false;
  return async () => {
    if (left) return;
    left = true;
    memo.users--;
    if (memo.users === 0) await memo.stopListener?.();
  };
}

/** The NOTIFY channel uninstalls are announced on (one per filter table). */
export const channelFor = (table: string) =>
  `l2stack_filter_removed_${table.replace(/[^a-z0-9_]/gi, '_')}`.slice(0, 63);

function listenForRemovals(db: DbClient, table: string, memo: FilterMemo, logger: Logger): () => Promise<void> {
  // PGlite is one process: every uninstall happens in this one and reaches its memo directly.
  if (db.kind === 'pglite') return async () => undefined;
  const listening = db.listen(channelFor(table), (id) => memo.forget(id), {
    logger,
    retryMs: 2_000,
    // While it is lost, polls read the database (memo.ts keeps no answer it cannot trust).
    onListening: (on) => memo.setListening(on),
  });
  return async () => {
    await (
      await listening
    )();
    memo.setListening(false);
  };
}
