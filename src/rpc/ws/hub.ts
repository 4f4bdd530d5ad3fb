import { randomBytes } from 'node:crypto';
import type { Logger } from '../../common/log.js';
import { BlockLogsReader, LOGS_READ_ATTEMPTS, readEventLogs, type LogsReadResult } from './block-logs.js';
import { PendingPoll } from './pending.js';
import type { Log } from '../../../generated/rpc/methods.js';
import { matches, type LogFilter } from './log-filter.js';
import { checkCanonical, replayHeads, replayLogs, stripTransactions, type ReplayContext } from './resume.js';
import {
  SubscribeError,
  type BlockHead,
  type HeadEvent,
  type HeadFeed,
  type NotificationSink,
  type ResumeCharge,
  type ResumePoint,
  type SubscriptionKind,
  type UpstreamCall,
} from './types.js';

interface Subscription {
  id: string;
  kind: SubscriptionKind;
  filter?: LogFilter;
  sink: NotificationSink;
  /** While a resume replays history, live notifications wait here (then are sent in order). */
  held?: string[];
  /** Stops following the socket's close (set when the subscription is bound to one). */
  detach?: () => void;
  /** Told that its logs could not be read: gets nothing more, and ends once its held items are out. */
  ended?: boolean;
  onEnd?: (id: string) => void;
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
  /** Bytes of one eth_getLogs body the hub sends (RPC_UPSTREAM_MAX_BATCH_BYTES): bigger unions are split. */
  maxLogsRequestBytes: number;
  onNotification?(kind: SubscriptionKind, count: number): void;
  /** A subscription was added or removed (gauges). */
  onChange?(): void;
  /** Each of the hub's own eth_getLogs outcomes (metrics). */
  onLogsRead?(outcome: 'ok' | 'retry' | 'split' | 'failed'): void;
  /** Logs subscriptions ended because their logs of a block could not be read (metrics). */
  onLogsEnded?(count: number): void;
}

export interface SubscribeOptions {
  filter?: LogFilter;
  resumeAfter?: ResumePoint;
  /** The socket's life: when it aborts, the subscription ends (and a resume in progress stops). */
  signal?: AbortSignal;
  /** Charges the client for what a resume reads (see resume.ts). */
  charge?: ResumeCharge;
  /**
   * Called once when the subscription ends, whatever ends it (unsubscribe, socket closed, send failed, logs
   * unreadable).
   */
  onEnd?: (id: string) => void;
}

const notification = (id: string, resultText: string) =>
  `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${id}","result":${resultText}}}`;

/**
 * The subscriptions of one replica, fed by its one head. Heads go out as soon as the head moves; logs
 * follow on their own queue, block after block in order: each block's logs are read once for every logs
 * filter (block-logs.ts: split by bytes, bounded attempts), matched in memory and fanned out, and a reorg
 * reports the logs of removed blocks again with `removed: true` before the new blocks' logs. So a read the
 * node keeps failing delays only logs, never heads; once given up, the logs subscriptions that needed it
 * are told so and ended (docs/rpc-websocket.md, "When logs cannot be read"), and the hub goes on.
 */
/** How long a resume from a block this replica has not reached yet waits for it (see subscribe). */
const RESUME_CATCH_UP_MS = 5_000;
/** Resumes waiting that way at once in this process; past it a resume ahead of the replica is refused at once. */
const MAX_CATCH_UP_WAITS = 1_000;

export class SubscriptionHub {
  private readonly subs = new Map<string, Subscription>();
  /** Resumes waiting for this replica to reach their block (reach). */
  private readonly catchUps = new Set<() => void>();
  private logsQueue: Promise<void> = Promise.resolve();
  /** Last block whose heads went out: a newHeads resume replays up to it, live takes over after. */
  private headsSent: bigint | undefined;
  /** Last block whose logs went out: a logs resume replays up to it. */
  private logsSent: bigint | undefined;
  private readonly logsByBlock = new Map<string, Log[]>();
  private readonly reader: BlockLogsReader;
  private unsubscribeFeed: (() => void) | undefined;
  private readonly pending: PendingPoll;
  private stopped = false;

  constructor(private readonly o: HubOptions) {
    this.pending = new PendingPoll({
      upstream: o.upstream,
      logger: o.logger,
      pollMs: o.pendingPollMs,
      onHashes: (hashes) =>
        this.fanOut(
          'newPendingTransactions',
          hashes.map((h) => JSON.stringify(h)),
        ),
    });
    this.reader = new BlockLogsReader({
      upstream: o.upstream,
      logger: o.logger,
      maxRequestBytes: o.maxLogsRequestBytes,
      stopped: () => this.stopped,
      onRead: o.onLogsRead,
    });
  }

  start(): void {
    this.headsSent = this.logsSent = this.o.feed.head?.number;
    this.unsubscribeFeed = this.o.feed.subscribe((event) => {
      this.sendHeads(event);
      this.logsQueue = this.logsQueue
        .then(() => this.onLogs(event))
        .catch((err: unknown) =>
          this.o.logger.warn(
            { err, block: event.head.number.toString() },
            'subscriptions: logs of a block could not be processed',
          ),
        );
    });
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribeFeed?.();
    this.pending.stop();
    this.progressed();
  }

  count(kind: SubscriptionKind): number {
    let n = 0;
    for (const s of this.subs.values()) if (s.kind === kind) n++;
    return n;
  }

  async subscribe(kind: SubscriptionKind, sink: NotificationSink, options: SubscribeOptions = {}): Promise<string> {
    const { signal } = options;
    if (signal?.aborted) throw new SubscribeError('the socket closed', -32000);
    const id = `0x${randomBytes(16).toString('hex')}`;
    const sub: Subscription = {
      id,
      kind,
      filter: kind === 'logs' ? (options.filter ?? { topics: [] }) : undefined,
      sink,
      onEnd: options.onEnd,
    };
    if (kind === 'newPendingTransactions' && options.resumeAfter)
      throw new SubscribeError(
        'newPendingTransactions cannot be resumed: pending transactions have no position in the chain',
        -32602,
      );
    const add = () => {
      this.subs.set(id, sub);
      if (signal) {
        const end = () => this.unsubscribe(id);
        signal.addEventListener('abort', end, { once: true });
        sub.detach = () => signal.removeEventListener('abort', end);
      }
      this.o.onChange?.();
    };
    if (!options.resumeAfter) {
      add();
      if (kind === 'newPendingTransactions') this.pending.start();
      return id;
    }
    const from = options.resumeAfter.blockNumber;
    const position = () => (kind === 'logs' ? this.logsSent : this.headsSent) ?? this.o.feed.head?.number;
    // Behind a load balancer the client may have had this block from another replica that is a moment ahead of
    // this one (its head, or its logs, came first): wait for this replica to get there, bounded, rather than
    // refuse a valid resume. Nothing is added meanwhile, so the replay below starts from where this one stands.
    await this.reach(from, position, signal);
    if (signal?.aborted) throw new SubscribeError('the socket closed', -32000);
    // Live notifications after `upTo` are held while the history up to it is replayed.
    const upTo = position();
    if (upTo === undefined) throw new SubscribeError('the endpoint has not seen a block yet; retry shortly', -32000);
    if (from > upTo)
      throw new SubscribeError(
        `resumeAfter block ${from} is ahead of the endpoint's head ${upTo} (waited ${RESUME_CATCH_UP_MS} ms for it)`,
        -32602,
      );
    if (upTo - from > BigInt(this.o.maxResumeBlocks)) {
      throw new SubscribeError(
        `resumeAfter block ${from} is ${upTo - from} blocks behind the head; a resume reaches back at most ${this.o.maxResumeBlocks} blocks (RPC_WS_MAX_RESUME_BLOCKS)`,
        -32005,
        { limit: this.o.maxResumeBlocks },
      );
    }
    sub.held = [];
    add();
    const ctx: ReplayContext = { upstream: this.o.upstream, feed: this.o.feed, signal, charge: options.charge };
    try {
      await checkCanonical(ctx, options.resumeAfter);
      const replayed =
        kind === 'logs'
          ? await replayLogs(ctx, sub.filter!, options.resumeAfter, upTo)
          : await replayHeads(ctx, options.resumeAfter, upTo);
      if (!this.subs.has(id)) throw new SubscribeError('the socket closed: the resume was cancelled', -32000);
      return this.release(sub, replayed);
    } catch (err) {
      this.unsubscribe(id);
      throw err;
    }
  }

  /**
   * Waits until `position()` reaches `from`, at most RESUME_CATCH_UP_MS (woken by this replica's progress, not
   * polled), or returns at once when MAX_CATCH_UP_WAITS resumes already wait.
   */
  private async reach(
    from: bigint,
    position: () => bigint | undefined,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    if (this.catchUps.size >= MAX_CATCH_UP_WAITS) return;
    const until = Date.now() + RESUME_CATCH_UP_MS;
    while ((position() ?? -1n) < from && !this.stopped && !signal?.aborted && Date.now() < until) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.catchUps.delete(done);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, until - Date.now());
        this.catchUps.add(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    }
  }

  /** Wakes the resumes waiting for this replica to reach their block (reach). */
  private progressed(): void {
    for (const done of [...this.catchUps]) done();
  }

  unsubscribe(id: string): boolean {
    const sub = this.subs.get(id);
    if (!sub) return false;
    this.subs.delete(id);
    sub.detach?.();
    sub.held = undefined;
    this.o.onChange?.();
    sub.onEnd?.(id);
    if (sub.kind === 'newPendingTransactions' && this.count('newPendingTransactions') === 0) this.pending.stop();
    return true;
  }

  /** Sends the replayed items, then what was held meanwhile, once the subscription id has been answered. */
  private release(sub: Subscription, replayed: string[]): string {
    setImmediate(() => {
      if (!this.subs.has(sub.id)) return; // ended meanwhile (socket closed, eth_unsubscribe): nothing to send
      // A send that fails means the socket is gone or cut off: the subscription ends with it, held items freed.
      for (const r of replayed) if (!sub.sink.send(notification(sub.id, r))) return void this.unsubscribe(sub.id);
      const held = sub.held ?? [];
      sub.held = undefined;
      for (const h of held) if (!sub.sink.send(h)) return void this.unsubscribe(sub.id);
      this.o.onNotification?.(sub.kind, replayed.length + held.length);
      if (sub.ended) this.unsubscribe(sub.id);
    });
    return sub.id;
  }

  private deliver(sub: Subscription, text: string): void {
    if (sub.held) sub.held.push(text);
    else if (!sub.sink.send(text)) this.unsubscribe(sub.id);
  }

  /** Each of `results` (JSON texts) to every subscription of `kind`, in order. */
  private fanOut(kind: SubscriptionKind, results: string[]): void {
    let sent = 0;
    for (const sub of [...this.subs.values()]) {
      if (sub.kind !== kind) continue;
      for (const r of results) this.deliver(sub, notification(sub.id, r));
      sent += results.length;
    }
    if (sent > 0) this.o.onNotification?.(kind, sent);
  }

  private sendHeads(event: HeadEvent): void {
    this.fanOut('newHeads', event.added.map(notificationBody));
    this.headsSent = event.head.number;
    this.progressed();
  }

  private logsSubs(): Subscription[] {
    return [...this.subs.values()].filter((s) => s.kind === 'logs' && !s.ended);
  }

  private async onLogs(event: HeadEvent): Promise<void> {
    const first = event.added[0]?.number;
    const gapFrom =
      event.gap && this.logsSent !== undefined && first !== undefined && first - 1n > this.logsSent
        ? this.logsSent + 1n
        : undefined;
    const { missed, added } = await readEventLogs(
      this.reader,
      event,
      gapFrom,
      () => this.logsSubs().map((s) => s.filter!),
      (b) => this.leftChain(b),
    );
    let removedLogs: Log[] = [];
    for (const b of event.removed)
      removedLogs = removedLogs.concat((this.logsByBlock.get(b.hash) ?? []).map((l) => ({ ...l, removed: true })));
    // From here on synchronous: a subscription added now gets this block live; one added later replays it.
    this.endUnreadable(event, [missed, ...added.values()]);
    let sent = 0;
    const logs = [...removedLogs, ...missed.logs, ...event.added.flatMap((b) => added.get(b.hash)?.logs ?? [])];
    const texts = new Map<Log, string>();
    const text = (log: Log) => texts.get(log) ?? texts.set(log, JSON.stringify(log)).get(log)!;
    for (const sub of this.logsSubs()) {
      for (const log of logs) {
        if (!matches(sub.filter!, log)) continue;
        this.deliver(sub, notification(sub.id, text(log)));
        sent++;
      }
    }
    if (sent > 0) this.o.onNotification?.('logs', sent);
    for (const b of event.removed) this.logsByBlock.delete(b.hash);
    for (const [hash, r] of added) this.logsByBlock.set(hash, r.logs);
    while (this.logsByBlock.size > this.o.logMemoryBlocks)
      this.logsByBlock.delete(this.logsByBlock.keys().next().value!);
    this.logsSent = event.head.number;
    this.progressed();
  }

  private leftChain(b: BlockHead): boolean {
    const now = this.o.feed.blockAt?.(b.number);
    return now !== undefined && now.hash !== b.hash;
  }

  /**
   * Logs the node would not give after every attempt: each subscription that needed them is told (one
   * `eth_subscription` message carrying `error` instead of `result`) and ended, rather than held forever
   * or silently missing logs. The client subscribes again with `resumeAfter` its last log to get the rest.
   */
  private endUnreadable(event: HeadEvent, reads: LogsReadResult[]): void {
    const failed = reads.filter((r) => r.failed !== undefined);
    if (failed.length === 0) return;
    const all = failed.some((r) => r.failed === 'all');
    const addresses = new Set<string>();
    if (!all) for (const r of failed) for (const a of r.failed as Set<string>) addresses.add(a);
    const cause = failed[0]!.error;
    const detail = cause instanceof Error ? cause.message : String(cause);
    const block = event.added[0]?.number ?? event.head.number;
    let ended = 0;
    for (const sub of this.logsSubs()) {
      const needed = all || sub.filter!.addresses === undefined || sub.filter!.addresses.some((a) => addresses.has(a));
      if (!needed) continue;
      const error = {
        code: -32000,
        message: `logs of block ${block} could not be read from the node after ${LOGS_READ_ATTEMPTS} attempts (${detail.slice(0, 300)}); this subscription has ended: subscribe again with {"resumeAfter": <the last log you processed>} to receive the rest`,
      };
      // After whatever it was already due (a resume's replay and held items first: it ends when they are out).
      this.deliver(
        sub,
        `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${sub.id}","error":${JSON.stringify(error)}}}`,
      );
      if (sub.held) sub.ended = true;
      else this.unsubscribe(sub.id);
      ended++;
    }
    this.o.logger.error(
      { err: cause, block: block.toString(), ended },
      'subscriptions: logs of a block could not be read; the logs subscriptions that needed them were ended',
    );
    if (ended > 0) this.o.onLogsEnded?.(ended);
  }
}

const notificationBody = (b: BlockHead) => JSON.stringify(stripTransactions(b.header));
