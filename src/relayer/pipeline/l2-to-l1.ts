import { Status } from '../message/status.js';
import type { Log } from 'ethers';
import { MessageMerkleTree, messageTrees } from '../../common/chain/messages.js';
import type { FinalizationRow, MessageRow } from '../db/repository.js';
import type { StatusChange } from '../message/writer.js';
import { decodeMessageSent } from '../message-sent.js';
import { duePage, messageSentLogs, type DirectionContext } from './context.js';
import { locateSource, markReorged } from './reorg.js';

/**
 * Indexes L1 finalizations once: BlocksFinalized with the L2MerkleRootAdded and L2MessagingBlockAnchored
 * logs of the same transaction, scanned in block windows behind the L1 confirmations, stored with the
 * scanner's resume point. Nothing is rescanned per message (unlike a per-message "earliest..latest" query).
 */
export function createFinalizationIndexer(ctx: DirectionContext) {
  const l1 = ctx.destination;
  const cfg = ctx.destinationConfig.listener;
  const ev = (name: string) => l1.iface.getEvent(name)!.topicHash;
  const [rootAdded, blockAnchored, finalized] = [
    ev('L2MerkleRootAdded'),
    ev('L2MessagingBlockAnchored'),
    ev('BlocksFinalized'),
  ];
  const cursorName = `finalizations:${l1.contract}`;
  let nextFrom: number | undefined;

  async function startBlock(safe: number): Promise<number> {
    const cursor = await ctx.repo.getCursor(cursorName);
    if (cursor !== undefined) return cursor + 1;
    // Messages from an explicit L2 start block may have been finalized long ago: scan L1 from its own
    // configured start, else from genesis. Otherwise only finalizations from now on can matter.
    if (cfg.initialFromBlock !== undefined) return cfg.initialFromBlock;
    if (ctx.originConfig.listener.initialFromBlock !== undefined) return 0;
    return Math.max(safe + 1, 0);
  }

  return async function tick(): Promise<boolean> {
    const head = await l1.provider.getBlockNumber();
    const safe = head - cfg.blockConfirmation;
    nextFrom ??= await startBlock(safe);
    if (nextFrom > safe) return false;
    const to = Math.min(nextFrom + cfg.maxBlocksToFetchLogs - 1, safe);
    const logs = await l1.provider.getLogs({
      address: l1.contract,
      topics: [[rootAdded, blockAnchored, finalized]],
      fromBlock: nextFrom,
      toBlock: to,
    });
    const byTx = new Map<string, Log[]>();
    for (const log of logs.filter((l) => !l.removed))
      byTx.set(log.transactionHash, [...(byTx.get(log.transactionHash) ?? []), log]);
    const rows: Omit<FinalizationRow, 'id' | 'leaves'>[] = [];
    for (const [tx, txLogs] of byTx) {
      txLogs.sort((a, b) => a.index - b.index);
      const roots: string[] = [];
      const blocks: number[] = [];
      let depth: number | null = null;
      for (const log of txLogs) {
        const p = l1.iface.parseLog(log)!;
        if (log.topics[0] === rootAdded) {
          roots.push(String(p.args.l2MerkleRoot).toLowerCase());
          depth = Number(p.args.treeDepth);
        } else if (log.topics[0] === blockAnchored) blocks.push(Number(p.args.l2Block));
        else {
          if (
            depth !== null &&
            ctx.config.l2MessageTreeDepth !== undefined &&
            depth !== ctx.config.l2MessageTreeDepth
          ) {
            ctx.logger.warn(
              { tx, depth, configured: ctx.config.l2MessageTreeDepth },
              'finalization tree depth differs from L2_MESSAGE_TREE_DEPTH; using the depth of the event',
            );
          }
          rows.push({
            contract_address: l1.contract,
            l1_tx_hash: tx.toLowerCase(),
            l1_block_number: String(log.blockNumber),
            first_l2_block: String(Number(p.args.lastFinalizedBlock) + 1),
            final_l2_block: String(p.args.finalizedBlock),
            tree_depth: depth,
            merkle_roots: roots,
            messaging_blocks: blocks,
          });
        }
      }
    }
    await ctx.repo.storeFinalizations(rows, { name: cursorName, lastBlock: to });
    if (rows.length > 0) ctx.logger.debug({ count: rows.length, l1Block: to }, 'finalizations indexed');
    nextFrom = to + 1;
    return to < safe;
  };
}

const sameRoots = (hashes: string[], depth: number, roots: string[]) => {
  const built = messageTrees(hashes, depth).map((t) => t.root.toLowerCase());
  return built.length === roots.length && built.every((r, i) => r === roots[i]);
};

/**
 * All L2 message hashes of a finalization, in message order, checked against the anchored roots. Taken
 * from the database first; when it lacks some (listener started later, or still behind), from the L2
 * MessageSent logs of the anchored blocks. Cached on the finalization row once verified.
 */
async function finalizationLeaves(ctx: DirectionContext, fin: FinalizationRow): Promise<string[]> {
  if (fin.leaves) return fin.leaves;
  const roots = fin.merkle_roots;
  if (roots.length === 0 || fin.tree_depth === null) return [];
  const depth = fin.tree_depth;
  const blocks = new Set(fin.messaging_blocks.map(Number));
  const range = { from: Math.min(...blocks), to: Math.max(...blocks) };
  const stored = (await ctx.repo.byHashes(ctx.direction, ctx.origin.contract, range)).filter((r) =>
    blocks.has(Number(r.sent_block_number)),
  );
  let leaves = stored.map((r) => r.message_hash);
  if (!sameRoots(leaves, depth, roots)) {
    const found: { nonce: bigint; hash: string }[] = [];
    const step = ctx.originConfig.listener.maxBlocksToFetchLogs;
    for (let from = range.from; from <= range.to; from += step) {
      for (const log of await messageSentLogs(ctx, from, Math.min(from + step - 1, range.to))) {
        if (!blocks.has(log.blockNumber)) continue;
        const m = decodeMessageSent(log);
        found.push({ nonce: m.nonce, hash: m.messageHash });
      }
    }
    leaves = found.sort((a, b) => (a.nonce < b.nonce ? -1 : a.nonce > b.nonce ? 1 : 0)).map((f) => f.hash);
    if (!sameRoots(leaves, depth, roots)) {
      throw new Error(
        `the ${leaves.length} L2 messages of blocks ${range.from}..${range.to} do not rebuild the roots of finalization ${fin.l1_tx_hash}`,
      );
    }
  }
  await ctx.repo.saveLeaves(fin.id, leaves);
  return leaves;
}

/**
 * A finalization covers the message's block without it, so it cannot be proven there. A reorg on L2 is the
 * cause: if it moved the message to a later block, follow it there; if it removed the message, it can never
 * be claimed: NON_EXECUTABLE with the reason, and no transaction. Otherwise the reason is recorded and the
 * next iteration looks again.
 */
async function settleUnanchored(ctx: DirectionContext, m: MessageRow, evidence: string): Promise<void> {
  const source = await locateSource(ctx, m);
  if (source.found === false) await markReorged(ctx, m, Status.SENT, evidence);
  else if (source.found && source.blockNumber !== Number(m.sent_block_number)) {
    await ctx.repo.annotate(m.id, Status.SENT, {
      sent_block_number: String(source.blockNumber),
      sent_tx_hash: source.txHash,
      sent_log_index: source.logIndex,
      failure_reason: `moved to L2 block ${source.blockNumber} by a reorg`,
    });
  } else {
    await ctx.repo.annotate(m.id, Status.SENT, { failure_reason: evidence });
  }
}

/**
 * The finalization that proves a message of `block`: the first recorded (lowest id) of those covering it, as
 * finalizationsCovering returns them in id order.
 */
export const finalizationFor = (byId: readonly FinalizationRow[], block: number): FinalizationRow | undefined =>
  byId.find((f) => Number(f.first_l2_block) <= block && block <= Number(f.final_l2_block));

/**
 * L2→L1, SENT → ANCHORED once an indexed finalization covers the message's block: the proof (root, leaf
 * index, siblings) is built here, once, from the finalization's verified leaves and stored with the
 * message, so claiming needs no further lookups.
 */
export function createL2L1AnchoringProcessor(ctx: DirectionContext) {
  return async function tick(): Promise<boolean> {
    const rows = await duePage(ctx, [Status.SENT]);
    const groups = new Map<string, { fin: FinalizationRow; messages: MessageRow[] }>();
    // One read for the whole page; a message whose block no finalization covers yet waits for the next tick.
    const known = await ctx.repo.finalizationsCovering(
      ctx.destination.contract,
      rows.map((m) => Number(m.sent_block_number)),
    );
    for (const m of rows) {
      const fin = finalizationFor(known, Number(m.sent_block_number));
      if (!fin) continue;
      const g = groups.get(fin.id) ?? { fin, messages: [] };
      g.messages.push(m);
      groups.set(fin.id, g);
    }
    let firstError: unknown;
    const now = new Date();
    const anchored: StatusChange[] = [];
    for (const { fin, messages } of groups.values()) {
      let leaves: string[];
      try {
        leaves = await finalizationLeaves(ctx, fin);
      } catch (err) {
        firstError ??= err;
        continue;
      }
      const index = new Map(leaves.map((h, i) => [h, i]));
      const width = 2 ** (fin.tree_depth ?? 0);
      const trees = new Map<number, MessageMerkleTree>();
      for (const m of messages) {
        const i = index.get(m.message_hash);
        if (i === undefined || fin.tree_depth === null) {
          await settleUnanchored(
            ctx,
            m,
            `block ${m.sent_block_number} is finalized by ${fin.l1_tx_hash} without the message`,
          );
          continue;
        }
        const chunk = Math.floor(i / width);
        const tree =
          trees.get(chunk) ?? new MessageMerkleTree(leaves.slice(chunk * width, (chunk + 1) * width), fin.tree_depth);
        trees.set(chunk, tree);
        const leafIndex = i % width;
        anchored.push({
          id: m.id,
          patch: {
            merkle_root: fin.merkle_roots[chunk]!,
            leaf_index: leafIndex,
            proof: tree.proof(leafIndex),
            anchored_at: now,
          },
        });
      }
    }
    // One statement for every message anchored this tick.
    await ctx.repo.transitionMany(anchored, [Status.SENT], Status.ANCHORED);
    if (firstError) throw firstError;
    return false;
  };
}
