import { pooledRpc } from '../../../src/common/chain/pool.js';

/**
 * Block production a test controls on its own devnet (started with a block time long enough that the
 * devnet's own ticker never fires). Per chain:
 * - `ticking`: a block every `intervalMs`, and one per transaction (automine), like the devnet;
 * - `txs-only`: a block per transaction only, so the test decides how many blocks follow one;
 * - `frozen`: no blocks at all; transactions wait in the pool (claims stay in flight).
 * A base-fee spike makes every block the ticker mines carry that base fee (automine off meanwhile, so no
 * block escapes it).
 */
export type Layer = 'l1' | 'l2';
export type MiningMode = 'ticking' | 'txs-only' | 'frozen';

export interface Miner {
  set(layer: Layer, mode: MiningMode): Promise<void>;
  spike(layer: Layer, baseFee: bigint): Promise<void>;
  /** Ends a spike: the next block's base fee is `baseFee`, then the chain ticks as usual. */
  endSpike(layer: Layer, baseFee: bigint): Promise<void>;
  mine(layer: Layer, blocks?: number): Promise<void>;
  rpc<T = unknown>(layer: Layer, method: string, params?: unknown[]): Promise<T>;
  stop(): Promise<void>;
}

const hex = (n: bigint) => `0x${n.toString(16)}`;

export function startMiner(urls: Record<Layer, string>, intervalMs = 500): Miner {
  const rpc = <T>(layer: Layer, method: string, params: unknown[] = []) =>
    pooledRpc<T>(urls[layer], method, params, 10_000);
  const mode: Record<Layer, MiningMode> = { l1: 'ticking', l2: 'ticking' };
  const spikes: Partial<Record<Layer, bigint>> = {};
  let stopped = false;
  // Ticks and mode changes run one at a time, so no tick of an old mode lands after a change resolved.
  let queue: Promise<unknown> = Promise.resolve();
  const change = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn);
    queue = run.catch(() => undefined);
    return run;
  };

  const tick = async () => {
    for (const layer of ['l1', 'l2'] as const) {
      if (mode[layer] !== 'ticking') continue;
      const fee = spikes[layer];
      if (fee !== undefined) await rpc(layer, 'anvil_setNextBlockBaseFeePerGas', [hex(fee)]);
      await rpc(layer, 'evm_mine');
    }
  };
  const loop = (async () => {
    while (!stopped) {
      await change(tick).catch(() => undefined); // a chain briefly busy: the next tick tries again
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();

  return {
    rpc,
    set: (layer, next) =>
      change(async () => {
        await rpc(layer, 'evm_setAutomine', [next !== 'frozen']);
        mode[layer] = next;
      }),
    spike: (layer, baseFee) =>
      change(async () => {
        await rpc(layer, 'evm_setAutomine', [false]);
        spikes[layer] = baseFee;
        mode[layer] = 'ticking';
      }),
    endSpike: (layer, baseFee) =>
      change(async () => {
        delete spikes[layer];
        await rpc(layer, 'anvil_setNextBlockBaseFeePerGas', [hex(baseFee)]);
        await rpc(layer, 'evm_mine');
        await rpc(layer, 'evm_setAutomine', [true]);
      }),
    mine: (layer, blocks = 1) =>
      change(async () => {
        for (let i = 0; i < blocks; i++) await rpc(layer, 'evm_mine');
      }),
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
