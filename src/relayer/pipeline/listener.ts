import { Status } from '../message/status.js';
import type { Log } from 'ethers';
import { createCalldataFilter, type CalldataFilter } from '../calldata-filter.js';
import type { NewMessage } from '../db/repository.js';
import { decodeMessageSent } from '../message-sent.js';
import { directionPrefix, messageSentLogs, type DirectionContext } from './context.js';

/**
 * Decides whether a message is relayed (SENT) or ruled out by the operator's switches and filters (EXCLUDED, with the
 * reason). Every message is stored either way, so the L2→L1 proofs always find all hashes of a finalized range, and
 * operators can see why a message was not claimed.
 */
export function classify(
  ctx: Pick<DirectionContext, 'direction' | 'dir' | 'originConfig' | 'origin'>,
  m: { from: string; to: string; calldata: string },
  calldataFilter: CalldataFilter | undefined,
): { status: NewMessage['status']; reason: string | null } {
  const p = ctx.origin.name;
  const f = ctx.originConfig.listener.eventFilters;
  const excluded = (reason: string) => ({ status: Status.EXCLUDED, reason });
  if (f?.fromAddress && m.from !== f.fromAddress)
    return excluded(`sender ${m.from} is not ${p}_EVENT_FILTER_FROM_ADDRESS ${f.fromAddress}`);
  if (f?.toAddress && m.to !== f.toAddress)
    return excluded(`destination ${m.to} is not ${p}_EVENT_FILTER_TO_ADDRESS ${f.toAddress}`);
  const prefix = directionPrefix(ctx.direction);
  if (m.calldata === '0x') {
    if (!ctx.dir.eoaEnabled) return excluded(`message without calldata and ${prefix}_EOA_ENABLED is false`);
    return { status: Status.SENT, reason: null };
  }
  if (!ctx.dir.calldataEnabled) return excluded(`message with calldata and ${prefix}_CALLDATA_ENABLED is false`);
  if (calldataFilter) {
    const r = calldataFilter.test(m.calldata);
    if (!r.pass) return excluded(`${r.reason} (${p}_EVENT_FILTER_CALLDATA)`);
  }
  return { status: Status.SENT, reason: null };
}

export function parseMessageSent(ctx: Pick<DirectionContext, 'origin' | 'direction'>, log: Log) {
  const m = decodeMessageSent(log);
  return {
    message_hash: m.messageHash,
    direction: ctx.direction,
    message_sender: m.from,
    destination: m.to,
    fee: m.fee.toString(),
    value: m.value.toString(),
    message_nonce: m.nonce.toString(),
    calldata: m.calldata,
    contract_address: ctx.origin.contract,
    sent_block_number: log.blockNumber,
    sent_tx_hash: log.transactionHash.toLowerCase(),
    sent_log_index: log.index,
  };
}

/**
 * The MessageSent listener of one direction: reads block windows of at most MAX_BLOCKS_TO_FETCH_LOGS up to head −
 * confirmations with eth_getLogs, and stores each window's messages together with the new resume point.
 */
export function createListener(ctx: DirectionContext) {
  const cfg = ctx.originConfig.listener;
  const calldataFilter = cfg.eventFilters?.calldata ? createCalldataFilter(cfg.eventFilters.calldata) : undefined;
  // The resume point is per contract: a redeployed contract starts afresh.
  const cursorName = `listener:${ctx.direction}:${ctx.origin.contract}`;
  let nextFrom: number | undefined;

  async function startBlock(safe: number): Promise<number> {
    const cursor = await ctx.repo.getCursor(cursorName);
    const initial = cfg.initialFromBlock;
    let from: number;
    if (initial !== undefined) from = cursor !== undefined && cursor >= initial ? cursor + 1 : initial;
    else from = cursor !== undefined ? cursor + 1 : Math.max(safe + 1, 0);
    ctx.logger.info({ direction: ctx.direction, from, resumed: cursor !== undefined }, 'listener starting');
    return from;
  }

  return async function tick(): Promise<boolean> {
    const head = await ctx.origin.provider.getBlockNumber();
    // A head far behind the highest seen: the chain may have been reset under us; nothing is read or stored from it
    // until its pin is checked (and not at all if it no longer matches: the direction stops).
    if (ctx.pin && !(await ctx.pin.sawHead(ctx.origin.name, head, cfg.blockConfirmation))) return false;
    const safe = head - cfg.blockConfirmation;
    nextFrom ??= await startBlock(safe);
    const labels = { direction: ctx.direction };
    if (nextFrom > safe) {
      ctx.metrics.listenerLag.set(labels, Math.max(head - (nextFrom - 1), 0));
      ctx.health.lastProgressAt = Date.now();
      return false;
    }
    const to = Math.min(nextFrom + cfg.maxBlocksToFetchLogs - 1, safe);
    const messages: NewMessage[] = (await messageSentLogs(ctx, nextFrom, to)).map((log) => {
      const m = parseMessageSent(ctx, log);
      const { status, reason } = classify(
        ctx,
        { from: m.message_sender, to: m.destination, calldata: m.calldata },
        calldataFilter,
      );
      return { ...m, status, failure_reason: reason };
    });
    const inserted = await ctx.repo.storeMessages(messages, { name: cursorName, lastBlock: to });
    for (const m of messages) ctx.metrics.messagesSeen.inc({ direction: ctx.direction, status: m.status });
    if (inserted > 0)
      ctx.logger.info({ direction: ctx.direction, from: nextFrom, to, stored: inserted }, 'messages stored');
    nextFrom = to + 1;
    ctx.health.lastProgressAt = Date.now();
    ctx.health.lastBlock = to;
    ctx.metrics.listenerBlock.set(labels, to);
    ctx.metrics.listenerLag.set(labels, head - to);
    return to < safe;
  };
}
