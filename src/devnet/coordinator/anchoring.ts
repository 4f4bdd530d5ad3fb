import type { Queries } from '../../common/db/queries.js';
import type { L1MessageService, L2MessageService } from '../../../generated/contracts/types/index.js';
import type { Logger } from '../../common/log.js';
import { mined } from '../../common/chain/mined.js';

/** What both coordinator tasks use: their progress (in `schema`), both message services on the coordinator's key. */
export interface CoordinatorContext {
  db: Queries;
  schema: string;
  l1: L1MessageService;
  l2: L2MessageService;
  logger: Logger;
}

export interface AnchoringContext extends CoordinatorContext {
  confirmations: number;
  maxBatch: number;
  /** L1 block to start scanning at on a fresh database (the message service's deployment block). */
  startBlock: number;
  logWindow: number;
}

const CURSOR = 'l1_scanned_block';

async function readCursor(ctx: AnchoringContext): Promise<number> {
  const row = await ctx.db.query('devnet.read_scan_cursor', (knex) =>
    knex.withSchema(ctx.schema).table('progress').where({ key: CURSOR }).first(),
  );
  return row ? Number(row.value) : ctx.startBlock - 1;
}

/**
 * Records the L1 messages of confirmed blocks (number, hash, rolling hash) and advances the scan cursor in
 * one transaction, so a crash between the two can neither skip nor duplicate a message.
 * Reorgs deeper than `confirmations` are not handled (anvil never reorganises by itself): a message
 * recorded and then removed from L1 stays recorded, and once anchored L2's rolling hash no longer follows
 * L1's, so later anchorings revert. Tests that reorganise L1 keep their reorgs shallower than this.
 */
export async function scanL1Messages(ctx: AnchoringContext): Promise<number> {
  const head = await ctx.l1.runner!.provider!.getBlockNumber();
  const safe = head - ctx.confirmations;
  let cursor = await readCursor(ctx);
  let found = 0;
  while (cursor < safe) {
    const to = Math.min(safe, cursor + ctx.logWindow);
    const events = await ctx.l1.queryFilter(ctx.l1.filters.RollingHashUpdated(), cursor + 1, to);
    const rows = events.map((e) => ({
      message_number: e.args.messageNumber.toString(),
      message_hash: e.args.messageHash,
      rolling_hash: e.args.rollingHash,
      l1_block: e.blockNumber,
    }));
    await ctx.db.transaction('devnet.record_l1_messages', async (trx) => {
      if (rows.length > 0)
        await trx.withSchema(ctx.schema).table('l1_messages').insert(rows).onConflict('message_number').ignore();
      await trx
        .withSchema(ctx.schema)
        .table('progress')
        .insert({ key: CURSOR, value: String(to), updated_at: trx.fn.now() })
        .onConflict('key')
        .merge();
    });
    found += rows.length;
    cursor = to;
  }
  return found;
}

/**
 * Anchors the next batch (at most maxBatch, in message order) of confirmed L1 message hashes on L2 with
 * the L1 rolling hash of the last one, which the L2 contract checks. The L2 contract's own counter is the
 * source of truth for what is already anchored, so a restart never anchors twice.
 */
export async function anchorNextBatch(ctx: AnchoringContext): Promise<number> {
  const lastAnchored = await ctx.l2.lastAnchoredL1MessageNumber();
  const rows: { message_number: string; message_hash: string; rolling_hash: string }[] = await ctx.db.query(
    'devnet.next_anchor_batch',
    (knex) =>
      knex
        .withSchema(ctx.schema)
        .table('l1_messages')
        .where('message_number', '>', lastAnchored.toString())
        .orderBy('message_number')
        .limit(ctx.maxBatch),
  );
  // Only a gap-free run starting right after the last anchored number can be anchored.
  const batch: typeof rows = [];
  for (const row of rows) {
    if (BigInt(row.message_number) !== lastAnchored + 1n + BigInt(batch.length)) break;
    batch.push(row);
  }
  if (batch.length === 0) return 0;
  const first = BigInt(batch[0]!.message_number);
  const last = batch[batch.length - 1]!;
  const tx = await ctx.l2.anchorL1L2MessageHashes(
    batch.map((r) => r.message_hash),
    first,
    BigInt(last.message_number),
    last.rolling_hash,
  );
  await mined(tx);
  ctx.logger.info({ from: first.toString(), to: last.message_number, tx: tx.hash }, 'anchored L1 messages on L2');
  return batch.length;
}
