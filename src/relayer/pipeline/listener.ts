import { toQuantity } from 'ethers';
import { createCalldataFilter, type CalldataFilter } from '../calldata-filter.js';
import type { NewMessage } from '../db/repository.js';
import { directionPrefix, type DirectionContext } from './context.js';
import { decodeMessageSent, type MessageSentFields, type RawLog } from '../message-sent.js';
import { FIRST_BATCH } from './sweep.js';

/** Resume point of one direction's listener, per contract (a redeployed contract starts afresh). */
export const listenerCursor = (ctx: Pick<DirectionContext, 'direction' | 'origin'>) => `listener:${ctx.direction}:${ctx.origin.contract}`;

/**
 * Decides whether a message is relayed (SENT) or ruled out by the operator's switches and filters
 * (EXCLUDED, with the reason). Every message is stored either way, so the L2→L1 proofs always find all
 * hashes of a finalized range, and operators can see why a message was not claimed.
 */
export function classify(
  ctx: Pick<DirectionContext, 'direction' | 'dir' | 'originConfig' | 'origin'>,
  m: { from: string; to: string; calldata: string },
  calldataFilter: CalldataFilter | undefined,
): { status: 'SENT' | 'EXCLUDED'; reason: string | null } {
  const p = ctx.origin.name;
  const f = ctx.originConfig.listener.eventFilters;
  const excluded = (reason: string) => ({ status: 'EXCLUDED' as const, reason });
  if (f?.fromAddress && m.from !== f.fromAddress) return excluded(`sender ${m.from} is not ${p}_EVENT_FILTER_FROM_ADDRESS ${f.fromAddress}`);
  if (f?.toAddress && m.to !== f.toAddress) return excluded(`destination ${m.to} is not ${p}_EVENT_FILTER_TO_ADDRESS ${f.toAddress}`);
  const prefix = directionPrefix(ctx.direction);
  if (m.calldata === '0x') {
    if (!ctx.dir.eoaEnabled) return excluded(`message without calldata and ${prefix}_EOA_ENABLED is false`);
    return { status: 'SENT', reason: null };
  }
  if (!ctx.dir.calldataEnabled) return excluded(`message with calldata and ${prefix}_CALLDATA_ENABLED is false`);
  if (calldataFilter) {
    const r = calldataFilter.test(m.calldata);
    if (!r.pass) return excluded(`${r.reason} (${p}_EVENT_FILTER_CALLDATA)`);
  }
  return { status: 'SENT', reason: null };
}

/** The stored record of a decoded MessageSent log. */
export function messageRecord(ctx: Pick<DirectionContext, 'origin' | 'direction'>, e: MessageSentFields) {
  return {
    message_hash: e.messageHash,
    direction: ctx.direction,
    message_sender: e.from,
    destination: e.to,
    fee: e.fee,
    value: e.value,
    message_nonce: e.nonce,
    calldata: e.calldata,
    contract_address: ctx.origin.contract,
    sent_block_number: e.blockNumber,
    sent_tx_hash: e.txHash,
    sent_log_index: e.logIndex,
  };
}

/** Messages stored per transaction at most, once a window's first chunks are in. */
const MAX_STORE_CHUNK = 1_000;

/**
 * The MessageSent listener of one direction: reads block windows of at most MAX_BLOCKS_TO_FETCH_LOGS up
 * to head − confirmations with eth_getLogs, and stores each window's messages together with the new
 * resume point. A window with many messages (a backlog at start) is stored in chunks, the first FIRST_BATCH
 * messages and each next chunk twice the last, one per iteration, so the pipeline's next stages start on the
 * first messages while the rest are decoded and stored. A chunk's resume point is the block before the next
 * message still to store: a restart reads that block again, and its messages already stored are left as they are.
 */
export function createListener(ctx: DirectionContext) {
  const cfg = ctx.originConfig.listener;
  const calldataFilter = cfg.eventFilters?.calldata ? createCalldataFilter(cfg.eventFilters.calldata) : undefined;
  const topic = ctx.origin.iface.getEvent('MessageSent')!.topicHash;
  const cursorName = listenerCursor(ctx);
  let nextFrom: number | undefined;
  /** The fetched window's logs not stored yet, the window's last block and the chain head when it was read. */
  let window: { logs: RawLog[]; to: number; head: number; chunk: number } | undefined;

  async function startBlock(safe: number): Promise<number> {
    const cursor = await ctx.repo.getCursor(cursorName);
    const initial = cfg.initialFromBlock;
    let from: number;
    if (initial !== undefined) from = cursor !== undefined && cursor >= initial ? cursor + 1 : initial;
    else from = cursor !== undefined ? cursor + 1 : Math.max(safe + 1, 0);
    ctx.logger.info({ direction: ctx.direction, from, resumed: cursor !== undefined }, 'listener starting');
    return from;
  }

  /** Reads the next window; false when there is none yet (nothing above the confirmations). */
  async function fetchWindow(): Promise<boolean> {
    const head = await ctx.origin.provider.getBlockNumber();
    const safe = head - cfg.blockConfirmation;
    nextFrom ??= await startBlock(safe);
    if (nextFrom > safe) {
      ctx.metrics.listenerLag.set({ direction: ctx.direction }, Math.max(head - (nextFrom - 1), 0));
      ctx.health.lastProgressAt = Date.now();
      return false;
    }
    const to = Math.min(nextFrom + cfg.maxBlocksToFetchLogs - 1, safe);
    const filter = { address: ctx.origin.contract, topics: [topic], fromBlock: toQuantity(nextFrom), toBlock: toQuantity(to) };
    const logs = (await ctx.origin.provider.send('eth_getLogs', [filter])) as RawLog[];
    window = { logs: logs.filter((l) => !l.removed), to, head, chunk: FIRST_BATCH };
    return true;
  }

  return async function tick(): Promise<boolean> {
    if (!window && !(await fetchWindow())) return false;
    const w = window!;
    const chunk = w.logs.slice(0, w.chunk);
    const rest = w.logs.slice(chunk.length);
    const lastBlock = rest.length > 0 ? Number(BigInt(rest[0]!.blockNumber)) - 1 : w.to;
    const messages: NewMessage[] = chunk.map((log) => {
      const m = messageRecord(ctx, decodeMessageSent(log, topic));
      const { status, reason } = classify(ctx, { from: m.message_sender, to: m.destination, calldata: m.calldata }, calldataFilter);
      return { ...m, status, failure_reason: reason };
    });
    let inserted: number;
    try {
      inserted = await ctx.repo.storeMessages(messages, { name: cursorName, lastBlock });
    } catch (err) {
      // Read again when tried again: held logs could be stale by then (a reorg during a database outage).
      window = undefined;
      throw err;
    }
    for (const m of messages) ctx.metrics.messagesSeen.inc({ direction: ctx.direction, status: m.status });
    if (inserted > 0) ctx.logger.info({ direction: ctx.direction, from: nextFrom, to: lastBlock, stored: inserted }, 'messages stored');
    w.logs = rest;
    w.chunk = Math.min(w.chunk * 2, MAX_STORE_CHUNK);
    nextFrom = lastBlock + 1;
    if (rest.length === 0) window = undefined;
    const labels = { direction: ctx.direction };
    ctx.health.lastProgressAt = Date.now();
    ctx.health.lastBlock = lastBlock;
    ctx.metrics.listenerBlock.set(labels, lastBlock);
    ctx.metrics.listenerLag.set(labels, w.head - lastBlock);
    return rest.length > 0 || w.to < w.head - cfg.blockConfirmation;
  };
}
