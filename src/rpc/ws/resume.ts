import { quantity } from '../types.js';
import type { Log } from '../../../generated/rpc/methods.js';
import { matches, type LogFilter } from './log-filter.js';
import { SubscribeError, type HeadFeed, type ResumeCharge, type ResumePoint, type UpstreamCall } from './types.js';

/**
 * The history a resumed subscription replays before it goes live (docs/rpc-websocket.md, "Resume after a
 * reconnect"). Every read is paid for by the client as over HTTP (1 unit per node call, 1 more per
 * RPC_RATE_LIMIT_BYTES_PER_UNIT bytes read) through `charge`, which ends the resume once the client is
 * over its limit, and each read first checks `signal`: a resume stops when its socket closes.
 */
export interface ReplayContext {
  upstream: UpstreamCall;
  feed: HeadFeed;
  signal?: AbortSignal;
  charge?: ResumeCharge;
}

/** Per block range of a replayed logs resume: eth_getLogs over at most this many blocks per call. */
const REPLAY_CHUNK_BLOCKS = 1_000n;
/** Headers the node is asked for at once (the pool merges them into one batch). */
const HEADER_GROUP = 20;

function checkOpen(ctx: ReplayContext): void {
  if (ctx.signal?.aborted) throw new SubscribeError('the socket closed: the resume was cancelled', -32000);
}

/** Before each read (or group of reads): the socket is open and the client not already over its limit. */
async function mayRead(ctx: ReplayContext): Promise<void> {
  checkOpen(ctx);
  await ctx.charge?.(0, 0);
  checkOpen(ctx);
}

async function read(ctx: ReplayContext, method: string, params: unknown[]): Promise<{ value: unknown; text: string }> {
  checkOpen(ctx);
  const value = await ctx.upstream(method, params);
  const text = JSON.stringify(value) ?? 'null';
  return { value, text };
}

export async function checkCanonical(ctx: ReplayContext, at: ResumePoint): Promise<void> {
  await mayRead(ctx);
  const { value, text } = await read(ctx, 'eth_getBlockByNumber', [quantity(at.blockNumber), false]);
  await ctx.charge?.(1, text.length);
  const block = value as { hash?: string } | null;
  if (!block || block.hash?.toLowerCase() !== at.blockHash.toLowerCase()) {
    throw new SubscribeError(
      `resumeAfter block ${at.blockNumber} (${at.blockHash}) is no longer on the canonical chain: a reorg replaced it; resubscribe from an earlier block you still trust`,
      -32000,
      { blockNumber: quantity(at.blockNumber), canonicalHash: block?.hash ?? null },
    );
  }
}

/** Headers after `at` up to `upTo`: those the head tracker still holds cost nothing, older ones are read. */
export async function replayHeads(ctx: ReplayContext, at: ResumePoint, upTo: bigint): Promise<string[]> {
  const out: string[] = [];
  for (let n = at.blockNumber + 1n; n <= upTo;) {
    const held = ctx.feed.blockAt?.(n);
    if (held) {
      out.push(JSON.stringify(stripTransactions(held.header)));
      n++;
      continue;
    }
    const group: bigint[] = [];
    for (; n <= upTo && group.length < HEADER_GROUP && !ctx.feed.blockAt?.(n); n++) group.push(n);
    await mayRead(ctx);
    const answers = await Promise.all(group.map((b) => read(ctx, 'eth_getBlockByNumber', [quantity(b), false])));
    await ctx.charge?.(
      answers.length,
      answers.reduce((sum, a) => sum + a.text.length, 0),
    );
    for (const a of answers) {
      if (a.value === null) return out;
      out.push(JSON.stringify(stripTransactions(a.value as Record<string, unknown>)));
    }
  }
  return out;
}

export async function replayLogs(
  ctx: ReplayContext,
  filter: LogFilter,
  at: ResumePoint,
  upTo: bigint,
): Promise<string[]> {
  const out: string[] = [];
  for (let from = at.blockNumber; from <= upTo; from += REPLAY_CHUNK_BLOCKS) {
    const to = from + REPLAY_CHUNK_BLOCKS - 1n < upTo ? from + REPLAY_CHUNK_BLOCKS - 1n : upTo;
    const criteria: Record<string, unknown> = { fromBlock: quantity(from), toBlock: quantity(to) };
    if (filter.addresses) criteria.address = filter.addresses;
    await mayRead(ctx);
    const { value, text } = await read(ctx, 'eth_getLogs', [criteria]);
    await ctx.charge?.(1, text.length);
    for (const log of value as Log[]) {
      const n = BigInt(log.blockNumber);
      if (n === at.blockNumber && (at.logIndex === undefined || BigInt(log.logIndex) <= at.logIndex)) continue;
      if (matches(filter, log)) out.push(JSON.stringify(log));
    }
  }
  return out;
}

/** newHeads carries the header only (as node clients send it), never the transaction list. */
export function stripTransactions(header: Record<string, unknown>): Record<string, unknown> {
  if (!('transactions' in header)) return header;
  const { transactions: _drop, ...rest } = header;
  return rest;
}
