import type { JsonRpcProvider } from 'ethers';
import type { Registry } from 'prom-client';
import type { Logger } from '../common/log.js';
import { counter, gauge, histogram } from '../common/metrics.js';
import { fromHex, quantity } from './bytes.js';
import { blockChanges, type BlockTrace } from './diff.js';
import type { AccountChange, WorldState } from './state.js';

interface BlockHeader {
  number: string;
  hash: string;
  parentHash: string;
}

export class ReorgBelowFinalizedError extends Error {
  override name = 'ReorgBelowFinalizedError';
}

/**
 * Follows the L2 upstream block by block: header, then the block's prestate diff, applied to the world
 * state in one commit (which is also the progress record, so a restart resumes after the last committed
 * block). A parent-hash mismatch means a reorg: the store rolls back to the last block both chains share,
 * which must be above the finalized block.
 */
export class Ingestor {
  private readonly m;
  private lastProgressLog = 0;
  private stepStarted = { at: Date.now(), block: -1n };

  constructor(
    private readonly world: WorldState,
    private readonly l2: JsonRpcProvider,
    private readonly logger: Logger,
    metrics: Registry,
    private readonly options: { maxBlocksPerStep: number; genesisAccounts: string[]; finalized: () => bigint | undefined },
  ) {
    this.m = {
      head: gauge(metrics, 'l2stack_state_ingested_block', 'Last L2 block applied to the state tree'),
      upstream: gauge(metrics, 'l2stack_state_upstream_block', 'Latest L2 block reported by the upstream'),
      applied: counter(metrics, 'l2stack_state_blocks_applied_total', 'L2 blocks applied to the state tree'),
      accounts: counter(metrics, 'l2stack_state_accounts_changed_total', 'Account changes applied (one per account per block)'),
      reorgs: counter(metrics, 'l2stack_state_reorgs_total', 'Reorgs handled by rolling back'),
      seconds: histogram(metrics, 'l2stack_state_apply_seconds', 'Time to fetch and apply one block'),
    };
  }

  /** Applies up to maxBlocksPerStep blocks; resolves true when it did something (call again at once). */
  async step(signal?: AbortSignal): Promise<boolean> {
    const head = await this.world.store.head();
    const upstream = BigInt(await this.l2.getBlockNumber());
    this.m.upstream.set(Number(upstream));
    if (head) this.m.head.set(Number(head.number));
    let next = head ? head.number + 1n : 0n;
    if (next > upstream) {
      // Nothing new; still notice a reorg that replaced our head with a block of the same height.
      if (head && head.number === upstream) {
        const h = await this.header(head.number);
        if (h && h.hash !== head.hash) await this.rollBack(head.number);
        return h !== undefined && h.hash !== head.hash;
      }
      return false;
    }
    let parentHash = head?.hash;
    const last = next + BigInt(this.options.maxBlocksPerStep) - 1n < upstream ? next + BigInt(this.options.maxBlocksPerStep) - 1n : upstream;
    for (; next <= last && !signal?.aborted; next++) {
      const started = performance.now();
      const h = await this.header(next);
      if (!h) break; // the upstream is behind its own head report (load balancing); try later
      if (parentHash !== undefined && h.parentHash !== parentHash) {
        await this.rollBack(next - 1n);
        return true;
      }
      const changes = next === 0n ? await this.genesis() : blockChanges((await this.l2.send('debug_traceBlockByNumber', [quantity(next), { tracer: 'prestateTracer', tracerConfig: { diffMode: true } }])) as BlockTrace);
      await this.world.applyBlock({ number: next, hash: h.hash, parentHash: h.parentHash }, changes);
      parentHash = h.hash;
      this.m.applied.inc();
      this.m.accounts.inc(changes.length);
      this.m.head.set(Number(next));
      this.m.seconds.observe((performance.now() - started) / 1000);
    }
    this.progress(next - 1n, upstream);
    return true;
  }

  private progress(block: bigint, upstream: bigint): void {
    const now = Date.now();
    const behind = upstream - block;
    if (behind > 0n && now - this.lastProgressLog >= 10_000) {
      const rate = Number(block - this.stepStarted.block) / Math.max((now - this.stepStarted.at) / 1000, 0.001);
      this.logger.info({ block: block.toString(), upstream: upstream.toString(), behind: behind.toString(), blocksPerSecond: Math.round(rate * 10) / 10 }, 'state backfill progress');
      this.lastProgressLog = now;
      this.stepStarted = { at: now, block };
    } else if (behind === 0n && this.lastProgressLog !== 0) {
      this.logger.info({ block: block.toString() }, 'state caught up with the L2 head');
      this.lastProgressLog = 0;
    }
  }

  private async header(n: bigint): Promise<BlockHeader | undefined> {
    const b = (await this.l2.send('eth_getBlockByNumber', [quantity(n), false])) as BlockHeader | null;
    return b ?? undefined;
  }

  /** Walks back from `from` to the newest block whose hash the upstream still agrees with, and rolls back to it. */
  private async rollBack(from: bigint): Promise<void> {
    const finalized = this.options.finalized() ?? -1n;
    let b = from;
    for (; b >= 0n; b--) {
      const ours = await this.world.store.block(b);
      if (!ours) break;
      const theirs = await this.header(b);
      if (theirs && theirs.hash === ours.hash) break;
    }
    if (b < finalized) {
      throw new ReorgBelowFinalizedError(`the L2 upstream replaced block ${b + 1n}, at or below the finalized block ${finalized}: refusing to roll back finalized state`);
    }
    const to = b;
    const head = (await this.world.store.head())?.number ?? -1n;
    this.logger.warn({ from: head.toString(), to: to.toString() }, 'L2 reorg: rolling the state back');
    await this.world.store.rollback(to);
    this.m.reorgs.inc();
  }

  /** Block 0: the configured genesis accounts as the chain reports them (nothing else is visible). */
  private async genesis(): Promise<AccountChange[]> {
    const out: AccountChange[] = [];
    for (const address of this.options.genesisAccounts) {
      const [balance, nonce, code] = await Promise.all([this.l2.getBalance(address, 0), this.l2.getTransactionCount(address, 0), this.l2.getCode(address, 0)]);
      if (balance === 0n && nonce === 0 && code === '0x') continue;
      out.push({ address, deleted: false, balance, nonce: BigInt(nonce), code: fromHex(code), storage: new Map() });
    }
    return out;
  }
}
