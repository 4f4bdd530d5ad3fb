import type { Logger } from '../../common/log.js';
import type { BlockHead, HeadEvent, HeadFeed } from '../ws/types.js';

type HeadListener = (event: HeadEvent) => void;

export interface HeadTrackerOptions {
  /** Fetches a block header by hash (null when the node does not have it). */
  blockByHash(hash: string): Promise<Record<string, unknown> | null>;
  /** Blocks remembered for reorg detection and filter polls (and the deepest reorg followed). */
  depth: number;
  logger: Logger;
}

/** A node's header object as a BlockHead, or undefined when it lacks number, hash or parentHash. */
function toBlockHead(header: unknown): BlockHead | undefined {
  if (header === null || typeof header !== 'object') return undefined;
  const h = header as Record<string, unknown>;
  if (typeof h.number !== 'string' || typeof h.hash !== 'string' || typeof h.parentHash !== 'string') return undefined;
  try {
    return { number: BigInt(h.number), hash: h.hash, parentHash: h.parentHash, header: h };
  } catch {
    return undefined;
  }
}

/** The head moved on by one block, `h`. */
const oneBlock = (h: BlockHead): HeadEvent => ({ head: h, added: [h], removed: [], gap: false });

/**
 * The canonical chain tip of one upstream pool, shared by everything in the process that asks "what is the head":
 * eth_blockNumber, `latest` in range checks and cache keys, filter polls. Heads are observed (from a newHeads
 * subscription or a poll, see head/source.ts) and linked by parentHash to the last `depth` blocks it remembers; a head
 * whose parent is not the remembered block at that height is followed back by hash to the common ancestor, and the
 * event lists the removed and added blocks. Observations are applied in order; one that extends the tip directly is
 * applied synchronously, so a subscriber's notification and the next request see the same head.
 */
export class HeadTracker implements HeadFeed {
  private readonly chain = new Map<bigint, BlockHead>();
  private tip: BlockHead | undefined;
  private tipSource: string | undefined;
  private finalizedNumber: bigint | undefined;
  private readonly listeners = new Set<HeadListener>();
  private pending: Promise<void> = Promise.resolve();
  private busy = 0;
  /** Bumped on every head move: caches keyed by it forget everything at once. */
  private epoch = 0;

  constructor(private readonly options: HeadTrackerOptions) {}

  get head(): BlockHead | undefined {
    return this.tip;
  }

  /** Increases with every change of the head (including reorgs). */
  get version(): number {
    return this.epoch;
  }

  /** The highest finalized block seen from the head's upstream (undefined until a poll read it). */
  get finalized(): bigint | undefined {
    return this.finalizedNumber;
  }

  /** The remembered canonical block at `number` (the last `depth` blocks), or undefined. */
  blockAt(number: bigint): BlockHead | undefined {
    return this.chain.get(number);
  }

  /** Calls `listener` for every move of the head; returns the function that unsubscribes. */
  subscribe(listener: HeadListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  observeFinalized(number: bigint, source: string): void {
    if (this.tipSource !== undefined && source !== this.tipSource) return;
    if (this.finalizedNumber === undefined || number > this.finalizedNumber) this.finalizedNumber = number;
  }

  /** A header seen on upstream `source` (a subscription notification or a poll answer). */
  observe(header: unknown, source: string): void {
    const h = toBlockHead(header);
    if (!h) return;
    if (this.busy === 0 && this.extendsTip(h)) return this.apply(oneBlock(h), source);
    this.busy++;
    this.pending = this.pending
      .then(() => this.link(h, source))
      .catch((err: unknown) =>
        this.options.logger.warn({ err, block: h.number.toString() }, 'head tracker could not link a block'),
      )
      .finally(() => this.busy--);
  }

  /** Resolves when every observation made so far is applied (tests, orderly shutdown). */
  settled(): Promise<void> {
    return this.pending;
  }

  private extendsTip(h: BlockHead): boolean {
    return this.tip === undefined ? false : h.number === this.tip.number + 1n && h.parentHash === this.tip.hash;
  }

  private async link(h: BlockHead, source: string): Promise<void> {
    const tip = this.tip;
    if (tip === undefined) return this.apply(oneBlock(h), source);
    const known = this.chain.get(h.number);
    if (known?.hash === h.hash) return; // a lagging node, or a poll after the subscription: nothing new
    // Lower or equal height with another hash: a reorg only when the node that gave us the tip says so (two healthy
    // nodes a block apart must not flip the head back and forth).
    if (h.number <= tip.number && source !== this.tipSource) return;
    if (this.extendsTip(h)) return this.apply(oneBlock(h), source);
    // Walk back by parentHash until the parent is a remembered canonical block (or memory runs out).
    const added = [h];
    let cursor = h;
    let gap = false;
    for (;;) {
      const parentNumber = cursor.number - 1n;
      const remembered = this.chain.get(parentNumber);
      if (remembered?.hash === cursor.parentHash) break;
      if (
        added.length >= this.options.depth ||
        parentNumber < 0n ||
        (remembered === undefined && parentNumber < this.lowest())
      ) {
        gap = remembered === undefined && parentNumber >= 0n && added.length >= this.options.depth;
        break;
      }
      const parent = toBlockHead(await this.options.blockByHash(cursor.parentHash));
      if (!parent) {
        gap = true;
        break;
      }
      added.unshift(parent);
      cursor = parent;
    }
    const ancestor = added[0]!.number - 1n;
    const removed: BlockHead[] = [];
    for (let n = ancestor + 1n; n <= tip.number; n++) {
      const b = this.chain.get(n);
      if (b) removed.push(b);
    }
    this.apply({ head: h, added, removed, gap }, source);
  }

  private lowest(): bigint {
    return this.tip === undefined ? 0n : this.tip.number - BigInt(this.chain.size) + 1n;
  }

  private apply(event: HeadEvent, source: string): void {
    for (const b of event.removed) this.chain.delete(b.number);
    if (event.gap) this.chain.clear();
    for (const b of event.added) this.chain.set(b.number, b);
    // A reorg to a shorter chain leaves stale heights above the new head.
    for (let n = event.head.number + 1n; this.chain.has(n); n++) this.chain.delete(n);
    const oldest = event.head.number - BigInt(this.options.depth);
    for (const n of this.chain.keys()) if (n <= oldest) this.chain.delete(n);
    this.tip = event.head;
    this.tipSource = source;
    if (this.finalizedNumber !== undefined && this.finalizedNumber > event.head.number)
      this.finalizedNumber = undefined;
    this.epoch++;
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.options.logger.warn({ err }, 'head listener failed');
      }
    }
  }
}
