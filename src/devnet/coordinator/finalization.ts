import type { JsonRpcProvider } from 'ethers';
import { messageTrees } from '../../common/chain/messages.js';
import { mined } from '../../common/chain/mined.js';
import type { CoordinatorContext } from './anchoring.js';

/** Where the state root submitted with a finalization comes from (the state manager, when it runs). */
export interface StateRootSource {
  /** Highest L2 block whose state root is known. */
  latestBlock(): bigint;
  rootAt(block: bigint): Promise<string | undefined>;
}

export interface FinalizationContext extends CoordinatorContext {
  l2Provider: JsonRpcProvider;
  treeDepth: number;
  stateRoots?: StateRootSource;
}

/**
 * Finalizes every L2 block after the last finalized one up to the head (or up to the last block the state
 * manager has applied): the Merkle roots of all L2 messages of the range in nonce order, chunked into
 * trees of 2^depth leaves, the L2 blocks that hold messages, and the state root of the final block.
 * Returns the newly finalized block, or undefined when there was nothing to do.
 */
export async function finalizeNewBlocks(ctx: FinalizationContext): Promise<bigint | undefined> {
  const current = await ctx.l1.currentL2BlockNumber();
  let target = BigInt(await ctx.l2Provider.getBlockNumber());
  if (ctx.stateRoots) target = target < ctx.stateRoots.latestBlock() ? target : ctx.stateRoots.latestBlock();
  if (target <= current) return undefined;

  const events = await ctx.l2.queryFilter(ctx.l2.filters.MessageSent(), Number(current + 1n), Number(target));
  const messages = events
    .map((e) => ({ nonce: e.args._nonce, hash: e.args._messageHash, block: e.blockNumber }))
    .sort((a, b) => (a.nonce < b.nonce ? -1 : 1));
  const hashes = messages.map((m) => m.hash);
  const roots = messageTrees(hashes, ctx.treeDepth).map((t) => t.root);
  const messagingBlocks = [...new Set(messages.map((m) => m.block))].sort((a, b) => a - b);

  const stateRoot = ctx.stateRoots
    ? await ctx.stateRoots.rootAt(target)
    : (await ctx.l2Provider.getBlock(Number(target)))?.stateRoot;
  if (!stateRoot) {
    ctx.logger.warn({ block: target.toString() }, 'no state root yet for the target block; finalizing later');
    return undefined;
  }
  const tx = await ctx.l1.finalizeBlocks(target, stateRoot, roots, ctx.treeDepth, messagingBlocks);
  await mined(tx);
  const row = {
    final_l2_block: target.toString(),
    previous_l2_block: current.toString(),
    state_root: stateRoot,
    merkle_roots: JSON.stringify(roots),
    tree_depth: ctx.treeDepth,
    message_count: messages.length,
    l1_tx_hash: tx.hash,
  };
  await ctx.db.query('devnet.record_finalization', (knex) =>
    knex.withSchema(ctx.schema).table('finalizations').insert(row).onConflict('final_l2_block').ignore(),
  );
  if (messages.length > 0)
    ctx.logger.info(
      {
        from: (current + 1n).toString(),
        to: target.toString(),
        messages: messages.length,
        roots: roots.length,
        tx: tx.hash,
      },
      'finalized L2 blocks on L1',
    );
  else ctx.logger.debug({ to: target.toString(), tx: tx.hash }, 'finalized L2 blocks on L1');
  return target;
}
