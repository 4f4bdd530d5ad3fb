import { randomBytes } from 'node:crypto';
import type { Logger } from '../../common/log.js';
import { matches, unionAddresses, type LogFilter, type WireLog } from './log-filter.js';

/** One block of the shared head (src/rpc/head/tracker.ts BlockHead). */
export interface FeedBlock {
  number: bigint;
  hash: string;
  parentHash: string;
  header: Record<string, unknown>;
}

/** One move of the head: blocks added (oldest first) and, on a reorg, blocks removed. */
export interface FeedEvent {
  head: FeedBlock;
  added: FeedBlock[];
  removed: FeedBlock[];
  gap: boolean;
}

/** The replica's one head (the upstream pool's head tracker): every subscription is fed from it. */
export interface HeadFeed {
  readonly head: FeedBlock | undefined;
  subscribe(listener: (event: FeedEvent) => void): () => void;
  /** The block the feed now holds at that height (undefined: not remembered). */
  blockAt?(number: bigint): FeedBlock | undefined;
}

/** Calls to the upstream pool; resolves the result, rejects with the node's error. */
export type UpstreamCall = (method: string, params: unknown[]) => Promise<unknown>;

/** Where a subscription's notifications go (one WebSocket); false when the socket is gone or was cut off. */
export interface NotificationSink {
  send(text: string): boolean;
}

export type SubscriptionKind = 'newHeads' | 'logs' | 'newPendingTransactions';

/** The last item a client processed: it receives everything after it, exactly once (see docs/rpc.md, "Resume after a reconnect"). */
export interface ResumePoint {
  blockNumber: bigint;
  blockHash: string;
  /** For logs: the last log of that block the client processed (undefined: the whole block was processed). */
  logIndex?: bigint;
}

export class SubscribeError extends Error {
  override name = 'SubscribeError';
  constructor(message: string, readonly code: number, readonly data?: unknown) {
    super(message);
  }
}

interface Subscription {
  id: string;
  kind: SubscriptionKind;
  filter?: LogFilter;
  sink: NotificationSink;
  /** While a resume replays history, live notifications wait here (then are sent in order). */
  held?: string[];
}

export interface HubOptions {
  feed: HeadFeed;
  upstream: UpstreamCall;
  logger: Logger;
  /** RPC_WS_MAX_RESUME_BLOCKS: how far back a resume may reach. */
  maxResumeBlocks: number;
  /** Poll period of the upstream pending-transaction filter while someone subscribes to it. */
  pendingPollMs: number;
  /** Blocks whose logs are remembered, to report them as removed on a reorg (the tracker's depth). */
  logMemoryBlocks: number;
  onNotification?(kind: SubscriptionKind, count: number): void;
  /** A subscription was added or removed (gauges). */
  onChange?(): void;
}

/** Per block range of a replayed resume: eth_getLogs over at most this many blocks per call. */
const REPLAY_CHUNK_BLOCKS = 1_000n;
/** A block's eth_getLogs that failed is asked again after this, doubling up to LOGS_RETRY_MAX_MS. */
const LOGS_RETRY_MS = 50;
const LOGS_RETRY_MAX_MS = 2_000;

const pause = (ms: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, ms).unref();
  });

/** Whether logs fetched for `fetched` (an eth_getLogs address member) include every log `wanted` needs. */
function covers(fetched: string[] | undefined, wanted: string[] | undefined): boolean {
  if (fetched === undefined) return true;
  if (wanted === undefined) return false;
  const have = new Set(fetched);
  return wanted.every((a) => have.has(a));
}

const notification = (id: string, resultText: string) => `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${id}","result":${resultText}}}`;

/**
 * The subscriptions of one replica, fed by its one head: a new block is fetched once (its header is in
 * the head event) and its logs with one eth_getLogs covering every logs filter, then matched in memory
 * and fanned out. Blocks are processed one after another, so notifications keep chain order; a reorg
 * reports the logs of removed blocks again with `removed: true` before the new blocks' logs.
 */
export class SubscriptionHub {
  private readonly subs = new Map<string, Subscription>();
  private queue: Promise<void> = Promise.resolve();
  /** Number of the last block whose notifications went out: a resume replays up to it, live takes over after. */
  private processed: bigint | undefined;
  private readonly logsByBlock = new Map<string, WireLog[]>();
  private unsubscribeFeed: (() => void) | undefined;
  private pendingTimer: NodeJS.Timeout | undefined;
  private pendingFilter: string | undefined;
  private stopped = false;

  constructor(private readonly o: HubOptions) {}

  start(): void {
    this.processed = this.o.feed.head?.number;
    this.unsubscribeFeed = this.o.feed.subscribe((event) => {
      this.queue = this.queue.then(() => this.onHead(event)).catch((err: unknown) => this.o.logger.warn({ err, block: event.head.number.toString() }, 'subscriptions: a block could not be processed'));
    });
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribeFeed?.();
    if (this.pendingTimer) clearInterval(this.pendingTimer);
    this.pendingTimer = undefined;
  }

  /** Resolves when every head event so far has been processed (tests). */
  settled(): Promise<void> {
    return this.queue;
  }

  count(kind?: SubscriptionKind): number {
    if (kind === undefined) return this.subs.size;
    let n = 0;
    for (const s of this.subs.values()) if (s.kind === kind) n++;
    return n;
  }

  async subscribe(kind: SubscriptionKind, sink: NotificationSink, options: { filter?: LogFilter; resumeAfter?: ResumePoint } = {}): Promise<string> {
    const id = `0x${randomBytes(16).toString('hex')}`;
    const sub: Subscription = { id, kind, filter: kind === 'logs' ? (options.filter ?? { topics: [] }) : undefined, sink };
    if (kind === 'newPendingTransactions') {
      if (options.resumeAfter) throw new SubscribeError('newPendingTransactions cannot be resumed: pending transactions have no position in the chain', -32602);
      this.subs.set(id, sub);
      this.o.onChange?.();
      this.ensurePendingPoll();
      return id;
    }
    if (!options.resumeAfter) {
      this.subs.set(id, sub);
      this.o.onChange?.();
      return id;
    }
    // Live notifications after `upTo` are held while the history up to it is replayed.
    const upTo = this.processed ?? this.o.feed.head?.number;
    if (upTo === undefined) throw new SubscribeError('the endpoint has not seen a block yet; retry shortly', -32000);
    const from = options.resumeAfter.blockNumber;
    if (from > upTo) throw new SubscribeError(`resumeAfter block ${from} is ahead of the endpoint's head ${upTo}`, -32602);
    if (upTo - from > BigInt(this.o.maxResumeBlocks)) {
      throw new SubscribeError(`resumeAfter block ${from} is ${upTo - from} blocks behind the head; a resume reaches back at most ${this.o.maxResumeBlocks} blocks (RPC_WS_MAX_RESUME_BLOCKS)`, -32005, { limit: this.o.maxResumeBlocks });
    }
    sub.held = [];
    this.subs.set(id, sub);
    this.o.onChange?.();
    try {
      await this.checkCanonical(options.resumeAfter);
      const replayed = kind === 'logs' ? await this.replayLogs(sub, options.resumeAfter, upTo) : await this.replayHeads(options.resumeAfter, upTo);
      return this.release(sub, replayed);
    } catch (err) {
      this.subs.delete(id);
      this.o.onChange?.();
      throw err;
    }
  }

  unsubscribe(id: string): boolean {
    const had = this.subs.delete(id);
    if (!had) return false;
    this.o.onChange?.();
    if (this.count('newPendingTransactions') === 0) this.stopPendingPoll();
    return true;
  }

  /** Sends the replayed items, then what was held meanwhile, once the subscription id has been answered. */
  private release(sub: Subscription, replayed: string[]): string {
    setImmediate(() => {
      for (const r of replayed) if (!sub.sink.send(notification(sub.id, r))) return;
      const held = sub.held ?? [];
      sub.held = undefined;
      for (const h of held) if (!sub.sink.send(h)) return;
      this.o.onNotification?.(sub.kind, replayed.length + held.length);
    });
    return sub.id;
  }

  private async checkCanonical(at: ResumePoint): Promise<void> {
    const block = (await this.o.upstream('eth_getBlockByNumber', [`0x${at.blockNumber.toString(16)}`, false])) as { hash?: string } | null;
    if (!block || block.hash?.toLowerCase() !== at.blockHash.toLowerCase()) {
      throw new SubscribeError(
        `resumeAfter block ${at.blockNumber} (${at.blockHash}) is no longer on the canonical chain: a reorg replaced it; resubscribe from an earlier block you still trust`,
        -32000,
        { blockNumber: `0x${at.blockNumber.toString(16)}`, canonicalHash: block?.hash ?? null },
      );
    }
  }

  private async replayHeads(at: ResumePoint, upTo: bigint): Promise<string[]> {
    const out: string[] = [];
    for (let n = at.blockNumber + 1n; n <= upTo; n++) {
      const header = await this.o.upstream('eth_getBlockByNumber', [`0x${n.toString(16)}`, false]);
      if (header === null) break;
      out.push(JSON.stringify(stripTransactions(header as Record<string, unknown>)));
    }
    return out;
  }

  private async replayLogs(sub: Subscription, at: ResumePoint, upTo: bigint): Promise<string[]> {
    const out: string[] = [];
    const filter = sub.filter!;
    for (let from = at.blockNumber; from <= upTo; from += REPLAY_CHUNK_BLOCKS) {
      const to = from + REPLAY_CHUNK_BLOCKS - 1n < upTo ? from + REPLAY_CHUNK_BLOCKS - 1n : upTo;
      const criteria: Record<string, unknown> = { fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` };
      if (filter.addresses) criteria.address = filter.addresses;
      const logs = (await this.o.upstream('eth_getLogs', [criteria])) as WireLog[];
      for (const log of logs) {
        const n = BigInt(log.blockNumber);
        if (n === at.blockNumber && (at.logIndex === undefined || BigInt(log.logIndex) <= at.logIndex)) continue;
        if (matches(filter, log)) out.push(JSON.stringify(log));
      }
    }
    return out;
  }

  private deliver(sub: Subscription, resultText: string): void {
    const text = notification(sub.id, resultText);
    if (sub.held) sub.held.push(text);
    else if (!sub.sink.send(text)) this.unsubscribe(sub.id);
  }

  /**
   * eth_getLogs for the hub's own use, asked again until the node answers: a block is held (and every
   * block after it, so order is kept) rather than its logs skipped, so each log goes out exactly once.
   * Gives up only when the hub stops, or when `block` has meanwhile left the chain the feed holds: its
   * logs were never sent, so there is nothing to send or later report removed.
   */
  private async logsWithRetry(criteria: Record<string, unknown>, block?: FeedBlock): Promise<WireLog[] | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return (await this.o.upstream('eth_getLogs', [criteria])) as WireLog[];
      } catch (err) {
        if (this.stopped) throw err;
        const now = block && this.o.feed.blockAt?.(block.number);
        if (block && now && now.hash !== block.hash) return undefined;
        if (attempt % 20 === 0) this.o.logger.warn({ err, attempt, block: block?.number.toString() }, 'subscriptions: eth_getLogs failed; the block is held and asked again');
        await pause(Math.min(LOGS_RETRY_MAX_MS, LOGS_RETRY_MS * 2 ** Math.min(attempt, 16)));
      }
    }
  }

  private async onHead(event: FeedEvent): Promise<void> {
    let missedLogs: WireLog[] = [];
    const addedLogs = new Map<string, WireLog[]>();
    // Fetched for the addresses of every logs subscription; fetched again if one that needs more was
    // added while the node was being asked (or retried).
    let fetchedFor: { address: string[] | undefined } | undefined;
    for (;;) {
      const filters = [...this.subs.values()].filter((s) => s.kind === 'logs').map((s) => s.filter!);
      if (filters.length === 0) break;
      const address = unionAddresses(filters);
      if (fetchedFor && covers(fetchedFor.address, address)) break;
      missedLogs = [];
      addedLogs.clear();
      const first = event.added[0]?.number;
      if (event.gap && this.processed !== undefined && first !== undefined && first - 1n > this.processed) {
        // The tracker lost track of more blocks than it remembers: their logs are read by range instead.
        const criteria: Record<string, unknown> = { fromBlock: `0x${(this.processed + 1n).toString(16)}`, toBlock: `0x${(first - 1n).toString(16)}` };
        if (address) criteria.address = address;
        missedLogs = (await this.logsWithRetry(criteria)) ?? [];
      }
      for (const b of event.added) {
        const criteria: Record<string, unknown> = { blockHash: b.hash };
        if (address) criteria.address = address;
        const logs = await this.logsWithRetry(criteria, b);
        if (logs) addedLogs.set(b.hash, logs);
      }
      fetchedFor = { address };
    }
    let removedLogs: WireLog[] = [];
    for (const b of event.removed) removedLogs = removedLogs.concat((this.logsByBlock.get(b.hash) ?? []).map((l) => ({ ...l, removed: true })));
    // From here on synchronous: a subscription added now gets this block live; one added later replays it.
    let sentHeads = 0;
    let sentLogs = 0;
    const heads = event.added.map((b) => JSON.stringify(stripTransactions(b.header)));
    const logs = [...removedLogs, ...missedLogs, ...event.added.flatMap((b) => addedLogs.get(b.hash) ?? [])];
    const logTexts = new Map<WireLog, string>();
    const text = (log: WireLog) => logTexts.get(log) ?? logTexts.set(log, JSON.stringify(log)).get(log)!;
    for (const sub of [...this.subs.values()]) {
      if (sub.kind === 'newHeads') {
        for (const h of heads) this.deliver(sub, h);
        sentHeads += heads.length;
      } else if (sub.kind === 'logs') {
        for (const log of logs) {
          if (!matches(sub.filter!, log)) continue;
          this.deliver(sub, text(log));
          sentLogs++;
        }
      }
    }
    if (sentHeads > 0) this.o.onNotification?.('newHeads', sentHeads);
    if (sentLogs > 0) this.o.onNotification?.('logs', sentLogs);
    for (const b of event.removed) this.logsByBlock.delete(b.hash);
    for (const [hash, logs] of addedLogs) this.logsByBlock.set(hash, logs);
    while (this.logsByBlock.size > this.o.logMemoryBlocks) this.logsByBlock.delete(this.logsByBlock.keys().next().value!);
    this.processed = event.head.number;
  }

  private ensurePendingPoll(): void {
    if (this.pendingTimer) return;
    this.pendingTimer = setInterval(() => void this.pollPending(), this.o.pendingPollMs);
    this.pendingTimer.unref();
  }

  private stopPendingPoll(): void {
    if (this.pendingTimer) clearInterval(this.pendingTimer);
    this.pendingTimer = undefined;
    const filter = this.pendingFilter;
    this.pendingFilter = undefined;
    if (filter) void this.o.upstream('eth_uninstallFilter', [filter]).catch(() => undefined);
  }

  private polling = false;
  private async pollPending(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      this.pendingFilter ??= (await this.o.upstream('eth_newPendingTransactionFilter', [])) as string;
      const hashes = (await this.o.upstream('eth_getFilterChanges', [this.pendingFilter])) as string[];
      let sent = 0;
      for (const sub of [...this.subs.values()]) {
        if (sub.kind !== 'newPendingTransactions') continue;
        for (const h of hashes) this.deliver(sub, JSON.stringify(h));
        sent += hashes.length;
      }
      if (sent > 0) this.o.onNotification?.('newPendingTransactions', sent);
    } catch (err) {
      // The node forgot the filter (restart, another node behind a balancer): make a new one next time.
      this.pendingFilter = undefined;
      this.o.logger.debug({ err }, 'pending-transaction poll failed');
    } finally {
      this.polling = false;
    }
  }
}

/** newHeads carries the header only (as node clients send it), never the transaction list. */
function stripTransactions(header: Record<string, unknown>): Record<string, unknown> {
  if (!('transactions' in header)) return header;
  const { transactions: _drop, ...rest } = header;
  return rest;
}
