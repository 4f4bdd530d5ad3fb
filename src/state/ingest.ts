import type { JsonRpcProvider } from 'ethers';
import type { Registry } from 'prom-client';
import type { Logger } from '../common/log.js';
import { counter, gauge, histogram } from '../common/metrics.js';
import { fromHex, quantity } from './bytes.js';
import { blockChanges, type BlockTrace } from './diff.js';
import { parityBlockChanges, type ParityBlockReplay } from './parity-diff.js';
import type { TraceMethod } from './config.js';
import type { JsonRpcCaller } from './rpc-client.js';
import { StagedStore, type BatchingStore } from './staged-store.js';
import { WorldState, type AccountChange, type AccountFields } from './state.js';
import type { VersionedStore } from './store.js';

const isBatchingStore = (s: VersionedStore): s is BatchingStore =>
  typeof (s as Partial<BatchingStore>).commitBlocks === 'function';

interface BlockHeader {
  number: string;
  hash: string;
  parentHash: string;
  /** The block's transaction hashes, in order (eth_getBlockByNumber without full transactions). */
  transactions?: string[];
}

export class ReorgBelowFinalizedError extends Error {
  override name = 'ReorgBelowFinalizedError';
}

/** One block as fetched from the upstream: its header and its net state change. */
interface FetchedBlock {
  header: BlockHeader;
  changes: AccountChange[];
}

/** Blocks fetched ahead of the one being applied while catching up (the upstream answers them in parallel). */
const FETCH_AHEAD = 8;
/** Rows staged in memory before a batch is written early (about 100 bytes each): bounds the memory of a batch. */
const MAX_STAGED_ROWS = 500_000;
/**
 * A batch open this long is written even if not full: finalization (and so svc_getProof and L2→L1 claims)
 * can only move up to a written block, so a slow catch-up still makes steady progress visible.
 */
const MAX_BATCH_MS = 2_000;

/**
 * Follows the L2 upstream block by block: header, then the block's prestate diff (traced by the header's
 * hash, so diff and header always belong to the same block), applied to the world state. While catching
 * up, up to `blocksPerTransaction` blocks are applied in memory on top of one another (StagedStore) and
 * written in one transaction; the block records double as the progress record, so a restart resumes
 * after the last written block. A parent-hash mismatch means a reorg: what is staged is written, then the
 * store rolls back to the last block both chains share, which must be above the finalized block.
 */
export class Ingestor {
  private readonly m;
  private lastProgressLog = 0;
  private stepStarted = { at: Date.now(), block: -1n };
  private readonly staged: StagedStore;
  private readonly stagedWorld: WorldState;

  constructor(
    private readonly world: WorldState,
    private readonly l2: JsonRpcProvider,
    private readonly logger: Logger,
    metrics: Registry,
    private readonly options: {
      maxBlocksPerStep: number;
      /** Blocks written per transaction while catching up (1: every block on its own). */
      blocksPerTransaction?: number;
      genesisAccounts: string[];
      finalized: () => bigint | undefined;
      /** Called after each write with the new head (the state manager publishes it to the coordinator at once). */
      onCommit?: (head: bigint) => void;
      /**
       * Headers and traces through this client (same upstream as `l2`) rather than ethers' provider: see rpc-client.ts.
       */
      rpc?: JsonRpcCaller;
      /** Default debug_traceBlockByHash. */
      traceMethod?: TraceMethod;
    },
  ) {
    if (!isBatchingStore(world.store))
      throw new Error('the state store cannot write several blocks in one transaction');
    this.staged = new StagedStore(world.store);
    this.stagedWorld = new WorldState(this.staged, world.c.hasher);
    this.m = {
      head: gauge(metrics, 'l2stack_state_ingested_block', 'Last L2 block applied to the state tree'),
      upstream: gauge(metrics, 'l2stack_state_upstream_block', 'Latest L2 block reported by the upstream'),
      applied: counter(metrics, 'l2stack_state_blocks_applied_total', 'L2 blocks applied to the state tree'),
      accounts: counter(
        metrics,
        'l2stack_state_accounts_changed_total',
        'Account changes applied (one per account per block)',
      ),
      reorgs: counter(metrics, 'l2stack_state_reorgs_total', 'Reorgs handled by rolling back'),
      seconds: histogram(
        metrics,
        'l2stack_state_apply_seconds',
        'Time to fetch and apply one block (its write is in l2stack_state_commit_seconds)',
      ),
      commits: histogram(
        metrics,
        'l2stack_state_commit_seconds',
        'Time to write one batch of blocks in one transaction',
      ),
      batch: histogram(
        metrics,
        'l2stack_state_commit_blocks',
        'Blocks written per transaction',
        [],
        [1, 2, 5, 10, 20, 50, 100, 200, 500],
      ),
    };
  }

  /** Applies up to maxBlocksPerStep blocks; resolves true when it did something (call again at once). */
  async step(signal?: AbortSignal): Promise<boolean> {
    try {
      return await this.catchUp(signal);
    } catch (err) {
      // Whatever was staged was never written: start the next step from what the store has.
      this.staged.discard();
      throw err;
    }
  }

  private async catchUp(signal?: AbortSignal): Promise<boolean> {
    await this.staged.sync();
    const head = await this.staged.head();
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
    const max = BigInt(this.options.maxBlocksPerStep);
    const last = next + max - 1n < upstream ? next + max - 1n : upstream;
    const perTransaction = this.options.blocksPerTransaction ?? 100;
    const ahead = this.fetchAhead(next, last);
    let batchStarted = performance.now();
    try {
      for (; next <= last && !signal?.aborted; next++) {
        const started = performance.now();
        const got = await ahead.get(next);
        if (!got) break; // the upstream is behind its own head report (load balancing); try later
        const { header: h, changes } = got;
        if (parentHash !== undefined && h.parentHash !== parentHash) {
          await this.flush();
          await this.rollBack(next - 1n);
          return true;
        }
        await this.stagedWorld.applyBlock({ number: next, hash: h.hash, parentHash: h.parentHash }, changes);
        parentHash = h.hash;
        this.m.accounts.inc(changes.length);
        this.m.seconds.observe((performance.now() - started) / 1000);
        if (
          this.staged.pendingBlocks >= perTransaction ||
          this.staged.pendingRows >= MAX_STAGED_ROWS ||
          performance.now() - batchStarted >= MAX_BATCH_MS
        ) {
          await this.flush();
          batchStarted = performance.now();
        }
      }
      await this.flush();
    } finally {
      ahead.stop();
    }
    this.progress(next - 1n, upstream);
    return true;
  }

  /** Writes the staged blocks in one transaction. */
  private async flush(): Promise<void> {
    const blocks = this.staged.pendingBlocks;
    if (blocks === 0) return;
    const top = (await this.staged.head())!.number;
    const timer = this.m.commits.startTimer();
    await this.staged.flush();
    timer();
    this.m.batch.observe(blocks);
    this.m.applied.inc(blocks);
    this.m.head.set(Number(top));
    this.options.onCommit?.(top);
  }

  /** Fetches blocks [from, to] up to FETCH_AHEAD ahead of the one asked for; `stop` drops what is in flight. */
  private fetchAhead(from: bigint, to: bigint): { get(n: bigint): Promise<FetchedBlock | undefined>; stop(): void } {
    const inFlight = new Map<bigint, Promise<FetchedBlock | undefined>>();
    let started = from;
    let stopped = false;
    return {
      get: (n) => {
        for (; !stopped && started <= to && started < n + BigInt(FETCH_AHEAD); started++) {
          const p = this.fetchBlock(started);
          p.catch(() => {}); // awaited (and so reported) only if the block is asked for
          inFlight.set(started, p);
        }
        const p = inFlight.get(n) ?? this.fetchBlock(n);
        inFlight.delete(n);
        return p;
      },
      stop: () => {
        stopped = true;
        inFlight.clear();
      },
    };
  }

  private async fetchBlock(n: bigint): Promise<FetchedBlock | undefined> {
    const header = await this.header(n);
    if (!header) return undefined;
    if (n === 0n) return { header, changes: await this.genesis() };
    if (this.options.traceMethod === 'trace_replayBlockTransactions')
      return { header, changes: await this.replayed(n, header) };
    const params = [header.hash, { tracer: 'prestateTracer', tracerConfig: { diffMode: true } }];
    const trace = await this.call<BlockTrace>('debug_traceBlockByHash', params);
    return { header, changes: blockChanges(trace) };
  }

  /**
   * The parity replay names its block by number only: the header read after it must be the one read before
   * (else a reorg replaced the block meanwhile and the step fails, to be retried), and the replay must hold
   * that header's transactions in order.
   */
  private async replayed(n: bigint, header: BlockHeader): Promise<AccountChange[]> {
    const replay = await this.call<ParityBlockReplay>('trace_replayBlockTransactions', [header.number, ['stateDiff']]);
    const again = await this.header(n);
    if (again?.hash !== header.hash)
      throw new Error(
        `L2 block ${n} was replaced while it was replayed (${header.hash} → ${again?.hash ?? 'none'}); reading it again`,
      );
    const expected = header.transactions;
    if (!Array.isArray(replay)) throw new Error(`trace_replayBlockTransactions of block ${n} did not answer an array`);
    if (
      expected &&
      (replay.length !== expected.length ||
        replay.some(
          (r, i) => r.transactionHash !== undefined && r.transactionHash.toLowerCase() !== expected[i]!.toLowerCase(),
        ))
    ) {
      throw new Error(
        `trace_replayBlockTransactions of block ${n} answered ${replay.length} transactions, not the block's ${expected.length}`,
      );
    }
    return parityBlockChanges(replay, (address, fields) => this.accountAt(address, fields, header.parentHash));
  }

  /** Fields of an account at a block (by hash, EIP-1898, so a reorg cannot answer for another block). */
  private async accountAt(
    address: string,
    fields: readonly (keyof AccountFields)[],
    blockHash: string,
  ): Promise<AccountFields> {
    const at = { blockHash };
    const read = async (f: keyof AccountFields) => {
      if (f === 'nonce') return { nonce: BigInt(await this.call<string>('eth_getTransactionCount', [address, at])) };
      if (f === 'balance') return { balance: BigInt(await this.call<string>('eth_getBalance', [address, at])) };
      return { code: fromHex(await this.call<string>('eth_getCode', [address, at])) };
    };
    return Object.assign({}, ...(await Promise.all(fields.map(read))));
  }

  private call<T>(method: string, params: unknown[]): Promise<T> {
    return this.options.rpc ? this.options.rpc.call<T>(method, params) : (this.l2.send(method, params) as Promise<T>);
  }

  private progress(block: bigint, upstream: bigint): void {
    const now = Date.now();
    const behind = upstream - block;
    if (behind > 0n && now - this.lastProgressLog >= 10_000) {
      const rate = Number(block - this.stepStarted.block) / Math.max((now - this.stepStarted.at) / 1000, 0.001);
      this.logger.info(
        {
          block: block.toString(),
          upstream: upstream.toString(),
          behind: behind.toString(),
          blocksPerSecond: Math.round(rate * 10) / 10,
        },
        'state backfill progress',
      );
      this.lastProgressLog = now;
      this.stepStarted = { at: now, block };
    } else if (behind === 0n && this.lastProgressLog !== 0) {
      this.logger.info({ block: block.toString() }, 'state caught up with the L2 head');
      this.lastProgressLog = 0;
    }
  }

  private async header(n: bigint): Promise<BlockHeader | undefined> {
    return (await this.call<BlockHeader | null>('eth_getBlockByNumber', [quantity(n), false])) ?? undefined;
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
      throw new ReorgBelowFinalizedError(
        `the L2 upstream replaced block ${b + 1n}, at or below the finalized block ${finalized}: refusing to roll back finalized state`,
      );
    }
    const to = b;
    const head = (await this.world.store.head())?.number ?? -1n;
    this.logger.warn({ from: head.toString(), to: to.toString() }, 'L2 reorg: rolling the state back');
    await this.world.store.rollback(to);
    // What the staged store knew of the head is from the abandoned branch.
    this.staged.discard();
    this.m.reorgs.inc();
  }

  /** Block 0: the configured genesis accounts as the chain reports them (nothing else is visible). */
  private async genesis(): Promise<AccountChange[]> {
    const out: AccountChange[] = [];
    for (const address of this.options.genesisAccounts) {
      const [balance, nonce, code] = await Promise.all([
        this.l2.getBalance(address, 0),
        this.l2.getTransactionCount(address, 0),
        this.l2.getCode(address, 0),
      ]);
      if (balance === 0n && nonce === 0 && code === '0x') continue;
      out.push({ address, deleted: false, balance, nonce: BigInt(nonce), code: fromHex(code), storage: new Map() });
    }
    return out;
  }
}
