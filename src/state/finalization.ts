import type { JsonRpcProvider } from 'ethers';
import type { Registry } from 'prom-client';
import { L1MessageService__factory, type L1MessageService } from '../../generated/contracts/types/index.js';
import type { Logger } from '../common/log.js';
import { counter, gauge } from '../common/metrics.js';
import type { VersionedStore } from './store.js';

const CURSOR = 'l1_cursor';
const FINALIZED = 'finalized_l2_block';

/**
 * Knows which L2 blocks are finalized on L1: scans the message service's BlocksFinalized events (kept
 * in the store, with the submitted state root) and reads currentL2BlockNumber() at the scanned L1 block.
 * Every L2 block at or below that number is finalized (block 0, genesis, always is). A submitted root
 * that differs from ours for the same block is reported (metric + error log): the chain and this state
 * tree disagree, and proofs for that block would not verify against L1.
 */
export class FinalizationFollower {
  private readonly contract: L1MessageService;
  private latest: bigint | undefined;
  private deployed = false;
  private readonly m;

  constructor(
    private readonly store: VersionedStore,
    private readonly l1: JsonRpcProvider,
    address: string,
    private readonly logger: Logger,
    metrics: Registry,
    private readonly options: {
      fromBlock: number;
      logRange: number;
      rootAt: (block: bigint) => Promise<string | undefined>;
    },
  ) {
    this.contract = L1MessageService__factory.connect(address, l1);
    this.m = {
      finalized: gauge(metrics, 'l2stack_state_finalized_block', 'Latest L2 block finalized on L1'),
      l1: gauge(metrics, 'l2stack_state_l1_scanned_block', 'Last L1 block scanned for BlocksFinalized'),
      mismatches: counter(
        metrics,
        'l2stack_state_root_mismatches_total',
        'Finalizations whose submitted state root differs from ours',
      ),
    };
  }

  /** The latest finalized L2 block, or undefined until L1 has been read once (also after a restart, from the store). */
  latestFinalized(): bigint | undefined {
    return this.latest;
  }

  async load(): Promise<void> {
    const saved = await this.store.getMeta(FINALIZED);
    if (saved !== undefined) this.latest = BigInt(saved);
  }

  /** currentL2BlockNumber() at an L1 block; 0 (only genesis) while the contract does not exist there yet. */
  private async finalizedAt(l1Block: number): Promise<bigint> {
    if (!this.deployed) {
      if ((await this.l1.getCode(await this.contract.getAddress(), l1Block)) === '0x') return 0n;
      this.deployed = true;
    }
    return this.contract.currentL2BlockNumber({ blockTag: l1Block });
  }

  async step(): Promise<boolean> {
    const l1Head = await this.l1.getBlockNumber();
    const cursor = Number((await this.store.getMeta(CURSOR)) ?? String(this.options.fromBlock - 1));
    let to = cursor;
    if (cursor < l1Head) {
      to = Math.min(l1Head, cursor + this.options.logRange);
      const logs = await this.contract.queryFilter(this.contract.filters.BlocksFinalized(), cursor + 1, to);
      for (const log of logs) {
        const { finalizedBlock, finalStateRoot } = log.args;
        await this.store.recordFinalization({
          l2Block: finalizedBlock,
          stateRoot: finalStateRoot,
          l1Block: BigInt(log.blockNumber),
          l1TxHash: log.transactionHash,
        });
        const ours = await this.options.rootAt(finalizedBlock);
        const zero = /^0x0{64}$/.test(finalStateRoot);
        if (ours !== undefined && !zero && ours.toLowerCase() !== finalStateRoot.toLowerCase()) {
          this.m.mismatches.inc();
          this.logger.error(
            { l2Block: finalizedBlock.toString(), submitted: finalStateRoot, ours, l1Tx: log.transactionHash },
            'state root finalized on L1 differs from ours',
          );
        }
      }
    }
    const finalized = await this.finalizedAt(to);
    await this.store.setMeta(CURSOR, String(to));
    if (this.latest === undefined || finalized !== this.latest) {
      await this.store.setMeta(FINALIZED, finalized.toString());
      if (this.latest !== undefined && finalized > this.latest)
        this.logger.debug({ finalized: finalized.toString() }, 'L2 blocks finalized on L1');
      this.latest = finalized;
    }
    this.m.finalized.set(Number(finalized));
    this.m.l1.set(to);
    return to < l1Head;
  }
}
