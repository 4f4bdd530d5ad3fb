import type { Logger } from '../common/log.js';
import { sleep } from '../common/shutdown.js';
import { pooledRpc } from '../common/chain/pool.js';
import type { Chain } from './chain.js';
import { pinDifferences, type ChainIdentity } from './db/chain-pin.js';
import type { RelayerMetrics } from './metrics.js';

type Layer = ChainIdentity['layer'];

/** The hash of the chain's block 0, as its node answers now. */
export async function genesisHash(url: string): Promise<string> {
  const genesis = await pooledRpc<{ hash: string } | null>(url, 'eth_getBlockByNumber', ['0x0', false]);
  if (!genesis?.hash) throw new Error('the node has no block 0');
  return genesis.hash;
}

/** The chain's identity as its node answers now: the chain id is asked again too (a reset node may change it). */
export async function readIdentity(c: Pick<Chain, 'name' | 'url' | 'contract'>): Promise<ChainIdentity> {
  const [id, genesis] = await Promise.all([pooledRpc<string>(c.url, 'eth_chainId'), genesisHash(c.url)]);
  return { layer: c.name, chainId: BigInt(id).toString(), genesisHash: genesis, contractAddress: c.contract };
}

export interface PinWatchOptions {
  /** The identities the database is pinned to (checked at the start). */
  pinned: readonly ChainIdentity[];
  chains: readonly Pick<Chain, 'name' | 'url' | 'contract'>[];
  logger: Logger;
  metrics: Pick<RelayerMetrics, 'chainPinMismatch'>;
  /** RELAYER_PIN_CHECK_INTERVAL_MS: how often a stopped direction looks whether the chains match again. */
  intervalMs: number;
}

/**
 * The chain pin while the relayer runs. The start's check (boot.ts) only covers the chains as they were then: a devnet
 * or testnet reset on the same ports, ids and addresses leaves cursors, nonces and claimed hashes of the old chains
 * aimed at the new ones. `check()` reads both chains' identities again (at RELAYER_PIN_CHECK_INTERVAL_MS and when a
 * listener sees its head go back by more than its confirmations); a mismatch is logged once as an error, set in
 * `relayer_chain_pin_mismatch{chain}`, named by readiness, and stops every direction (both directions use both chains)
 * until the chains match again. A node that does not answer changes nothing: readiness already names it.
 */
export class ChainPinWatch {
  private readonly mismatches = new Map<Layer, string[]>();
  private readonly highest = new Map<Layer, number>();
  private readonly onMismatch = new Set<() => void>();
  private checking: Promise<boolean> | undefined;

  constructor(private readonly o: PinWatchOptions) {
    for (const c of o.chains) o.metrics.chainPinMismatch.set({ chain: c.name }, 0);
  }

  /**
   * What differs from the pin ("L1 genesis block hash stored 0x…, now 0x…"), chain by chain in the order of the pin
   * (not of detection: the head path and the interval race), or undefined while all matches.
   */
  get mismatch(): string | undefined {
    if (this.mismatches.size === 0) return undefined;
    return this.o.chains.flatMap((c) => this.mismatches.get(c.name) ?? []).join('; ');
  }

  /** Reads every chain's identity now; true when all match their pins. Concurrent callers share one reading. */
  check(): Promise<boolean> {
    return (this.checking ??= this.compare().finally(() => (this.checking = undefined)));
  }

  /**
   * A listener saw `head` on `layer`. Within `depth` blocks of the highest head seen (a reorg the listener's
   * confirmations cover) nothing is asked; further back, the pin is checked at once. False on a mismatch.
   */
  sawHead(layer: Layer, head: number, depth: number): boolean | Promise<boolean> {
    const top = this.highest.get(layer);
    if (top === undefined || head > top) this.highest.set(layer, head);
    if (top === undefined || head >= top - depth) return this.mismatches.size === 0;
    this.highest.set(layer, head);
    this.o.logger.warn(
      { chain: layer, head, highest: top },
      `${layer} head went back from ${top} to ${head}, more than ${layer}_LISTENER_BLOCK_CONFIRMATION (${depth}): checking the chain pin now`,
    );
    return this.check();
  }

  /** `fn` is called when a chain stops matching its pin; returns the unsubscribe. */
  whenMismatched(fn: () => void): () => void {
    this.onMismatch.add(fn);
    return () => this.onMismatch.delete(fn);
  }

  /** Resolves true once every chain matches its pin again (read each interval), false when `signal` aborts first. */
  async cleared(signal: AbortSignal): Promise<boolean> {
    while (this.mismatches.size > 0) {
      if (!(await sleep(this.o.intervalMs, signal))) return false;
      await this.check();
    }
    return true;
  }

  private async compare(): Promise<boolean> {
    const read = await Promise.all(this.o.chains.map((c) => readIdentity(c).catch(() => undefined)));
    for (const now of read) if (now) this.record(now.layer, pinDifferences(this.o.pinned, [now]));
    return this.mismatches.size === 0;
  }

  private record(layer: Layer, differences: string[]): void {
    const had = this.mismatches.has(layer);
    this.o.metrics.chainPinMismatch.set({ chain: layer }, differences.length > 0 ? 1 : 0);
    if (differences.length === 0) {
      if (!had) return;
      this.mismatches.delete(layer);
      this.o.logger.warn(
        { chain: layer },
        `${layer} matches its chain pin again${this.mismatches.size === 0 ? ': the directions start again' : ''}`,
      );
      return;
    }
    this.mismatches.set(layer, differences);
    if (had) return;
    // Once per mismatch (not per check): it stays in readiness and the metric while it lasts.
    this.o.logger.error(
      { chain: layer, differences },
      `chain pin mismatch while running: ${differences.join('; ')}. Every direction stopped claiming; nothing stored is changed. ` +
        'If the chains were really reset, stop every relayer and run `l2stack relayer reset-chain-pin`',
    );
    for (const fn of this.onMismatch) fn();
  }
}
