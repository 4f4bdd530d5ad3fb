import { chainCalls, everyInterval } from './pool-keeper.js';

/** How long one evm_mine may take before the ticker gives it up and tries again at the next tick. */
const TICK_TIMEOUT_MS = 10_000;

/**
 * Keeps a chain moving: anvil mines one block per transaction (automine) so transactions confirm at once,
 * and this mines an empty block every interval, so confirmations, finalization and "latest" advance even
 * when nobody transacts (anvil's interval mining would switch automine off and make every tx wait).
 */
export function startBlockTicker(url: string, intervalMs: number, signal: AbortSignal): Promise<void> {
  // Bounded: fetch waits up to 300 s for an answer, and a tick that hangs would stop the chain's clock.
  const timeout = () => AbortSignal.any([signal, AbortSignal.timeout(TICK_TIMEOUT_MS)]);
  return everyInterval(intervalMs, signal, () => chainCalls(url, [['evm_mine', []]], timeout()));
}
