import type { MethodParams } from '../types.js';

/** What the subscription hub, its log reads and its resumes share (kept apart so none imports another's module). */

/**
 * One block of the shared head as the head tracker (src/rpc/head/tracker.ts) knows it. `header` is the node's header
 * object (for newHeads fan-out).
 */
export interface BlockHead {
  number: bigint;
  hash: string;
  parentHash: string;
  header: Record<string, unknown>;
}

/**
 * What one move of the head changed, oldest first. `removed` is non-empty only on a reorg: those blocks left the
 * canonical chain (a logs subscription reports their logs again with `removed: true`).
 */
export interface HeadEvent {
  head: BlockHead;
  added: BlockHead[];
  removed: BlockHead[];
  /** More than `depth` blocks were missed: `added` holds only the newest, earlier blocks are unknown. */
  gap: boolean;
}

/** The replica's one head (the upstream pool's head tracker): every subscription is fed from it. */
export interface HeadFeed {
  readonly head: BlockHead | undefined;
  subscribe(listener: (event: HeadEvent) => void): () => void;
  /** The block the feed now holds at that height (undefined: not remembered). */
  blockAt?(number: bigint): BlockHead | undefined;
}

/** Calls to the upstream pool; resolves the result, rejects with the node's error. */
export type UpstreamCall = (method: string, params: unknown[]) => Promise<unknown>;

/** Where a subscription's notifications go (one WebSocket); false when the socket is gone or was cut off. */
export interface NotificationSink {
  send(text: string): boolean;
}

export type SubscriptionKind = MethodParams<'eth_subscribe'>[0];

/**
 * The last item a client processed: it receives everything after it, exactly once (see docs/rpc-websocket.md, "Resume
 * after a reconnect").
 */
export interface ResumePoint {
  blockNumber: bigint;
  blockHash: string;
  /** For logs: the last log of that block the client processed (undefined: the whole block was processed). */
  logIndex?: bigint;
}

/**
 * What a resume's reads cost the client: called after each read from the node with the calls made and the bytes they
 * returned; rejects (with a SubscribeError) once the client is over its rate limit, which ends the resume.
 */
export type ResumeCharge = (calls: number, bytes: number) => Promise<void>;

export class SubscribeError extends Error {
  override name = 'SubscribeError';
  constructor(
    message: string,
    readonly code: number,
    readonly data?: unknown,
  ) {
    super(message);
  }
}
