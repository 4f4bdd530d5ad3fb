import { randomUUID } from 'node:crypto';
import { RpcError } from '../../common/errors.js';
import type { RpcContext } from '../context.js';
import { RpcCodes } from '../errors.js';
import type { FilterStore } from './store.js';

/** Hashes one poll returns at most; the rest come with the next poll. */
const MAX_PER_POLL = 10_000;

/** The poll's answer when hashes may have been lost: never an empty array that hides them. */
const pendingMissed = (id: string) =>
  new RpcError(
    RpcCodes.Server,
    `pending transactions may have been missed by filter ${id}: the node forgot this endpoint's watch of its pending transactions (a node restart, or another node behind the endpoint); the filter is removed, create a new one`,
  );

/** A poll that lost the race to move the filter's cursor on every attempt. */
export const pollRaceLost = (id: string) =>
  new RpcError(
    RpcCodes.LimitExceeded,
    `filter ${id} is being polled by too many callers at once; poll it from one place`,
  );

/**
 * One replica's watch of the node's pending transactions: a pending-transaction filter on the node, polled every
 * RPC_WS_PENDING_POLL_MS, its hashes recorded in the shared table (FilterStore.recordPending). It runs while a client's
 * pending filter was made or polled here within RPC_FILTER_TTL_SECONDS (plus two polls), then ends and uninstalls the
 * node's filter. Why that covers every hash whichever replica a poll reaches: a live filter was touched less than a TTL
 * ago, and the replica touched then still watches; a replica touched for the first time makes its node filter before it
 * answers, while the previous one still watches. When the node forgets our filter (restart, another node behind the
 * pool), a gap is recorded: polls whose range holds it answer pendingMissed instead of a silent hole. So is one when a
 * watch starts while live filters wait and no other watch beat (pending_watchers) within three polls: every watching
 * replica died. (A watch that ends does so a TTL after its last touch, when the filters it served have expired.)
 */
export class PendingWatch {
  private nodeFilter: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private until = 0;
  private turn: Promise<void> = Promise.resolve();
  private stopped = false;
  private beating = false;
  /** This watch in pending_watchers. */
  private readonly id = randomUUID();

  constructor(private readonly ctx: RpcContext) {}

  /** Keeps watching for a TTL from now; resolves once this replica's view of the node is recorded. */
  keep(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const tickMs = this.ctx.config.ws.pendingPollMs;
    this.until = Date.now() + this.ctx.config.filterTtlSeconds * 1000 + 2 * tickMs;
    if (!this.timer) {
      const failed = (err: unknown) => this.ctx.logger.warn({ err }, 'pending-transaction watch failed');
      this.timer = setInterval(() => {
        // Alive with a node filter: said every tick, apart from the collections, which wait for the node. When the beat
        // came after the node's answer, a node slower than three ticks (or this process paused as long) made the watch
        // look dead to a replica starting one (pendingUnwatched), which then recorded a gap that was not there. The
        // node filter keeps what arrives meanwhile, so a slow node loses nothing.
        // One beat at a time: a database slower than a tick does not pile them up.
        if (this.nodeFilter !== undefined && Date.now() <= this.until && !this.beating) {
          this.beating = true;
          void this.ctx.filters
            .beatPending(this.id)
            .catch(failed)
            .finally(() => (this.beating = false));
        }
        void this.collect().catch(failed);
      }, tickMs);
      this.timer.unref();
    }
    return this.collect();
  }

  /** Collections run one at a time (a tick and a poll may want one together). */
  private collect(): Promise<void> {
    const next = this.turn.then(() => this.collectOnce());
    this.turn = next.catch(() => undefined);
    return next;
  }

  private async collectOnce(): Promise<void> {
    if (this.stopped || Date.now() > this.until) return this.stop();
    const { upstream } = this.ctx;
    if (this.nodeFilter === undefined) {
      this.nodeFilter = (await upstream.request('eth_newPendingTransactionFilter', [])) as string;
      // A round starts: if live filters waited while no replica watched (they all died), say so.
      if (await this.ctx.filters.pendingUnwatched(this.id, 3 * this.ctx.config.ws.pendingPollMs)) {
        this.ctx.logger.warn(
          'pending-transaction filters were live while no replica watched the node; recording a gap',
        );
        await this.ctx.filters.recordPending(null);
      }
      await this.ctx.filters.beatPending(this.id);
      return;
    }
    let hashes: string[];
    try {
      hashes = (await upstream.request('eth_getFilterChanges', [this.nodeFilter])) as string[];
    } catch (err) {
      // A transport failure says nothing about the filter (the next tick asks again); an answer does.
      if (!(err instanceof RpcError)) throw err;
      this.ctx.logger.warn(
        { err },
        'the node forgot the pending-transaction filter; recording a gap and making a new one',
      );
      await this.ctx.filters.recordPending(null);
      this.nodeFilter = (await upstream.request('eth_newPendingTransactionFilter', [])) as string;
      return;
    }
    await this.ctx.filters.recordPending(hashes);
  }

  /** Ends this round of watching (a later keep starts another, with a new node filter). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const filter = this.nodeFilter;
    this.nodeFilter = undefined;
    if (filter !== undefined) void this.ctx.upstream.request('eth_uninstallFilter', [filter]).catch(() => undefined);
  }

  /** For shutdown: ends the watch for good. */
  close(): void {
    this.stopped = true;
    this.stop();
  }
}

const watches = new WeakMap<FilterStore, PendingWatch>();

/** The replica's one watch (per filter store: tests run several endpoints in one process). */
export function pendingWatch(ctx: RpcContext): PendingWatch {
  let w = watches.get(ctx.filters);
  if (!w) watches.set(ctx.filters, (w = new PendingWatch(ctx)));
  return w;
}

/** Ends the watch of a store whose endpoint stops. */
export function closePendingWatch(filters: FilterStore): void {
  watches.get(filters)?.close();
}

/**
 * A poll of a pending-transaction filter: this replica's view is recorded first, then the hashes from the filter's
 * cursor (a seq) are returned and the cursor moved by compare-and-set, as for the other filters; a poll that loses the
 * race reads again from the winner's cursor.
 */
export async function pollPending(ctx: RpcContext, id: string): Promise<string[]> {
  await pendingWatch(ctx).keep();
  for (let attempt = 0; attempt < 50; attempt++) {
    const f = await ctx.filters.get(id, 'pending');
    const rows = await ctx.filters.pendingFrom(f.nextBlock, MAX_PER_POLL);
    if (rows.some((r) => r.hash === null)) {
      await ctx.filters.remove(f.id);
      throw pendingMissed(id);
    }
    const next = rows.length > 0 ? rows[rows.length - 1]!.seq + 1n : f.nextBlock;
    if (next === f.nextBlock && !f.stale) return [];
    if (await ctx.filters.advance(f.id, f.nextBlock, next)) return rows.map((r) => r.hash!);
  }
  throw pollRaceLost(id);
}
