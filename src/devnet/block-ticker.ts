import { sleep } from '../common/shutdown.js';

/**
 * Keeps a chain moving: anvil mines one block per transaction (automine) so transactions confirm at once,
 * and this mines an empty block every interval, so confirmations, finalization and "latest" advance even
 * when nobody transacts (anvil's interval mining would switch automine off and make every tx wait).
 */
export function startBlockTicker(url: string, intervalMs: number, signal: AbortSignal): Promise<void> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'evm_mine', params: [] });
  return (async () => {
    while (await sleep(intervalMs, signal)) {
      try {
        await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal });
      } catch {
        // the chain is stopping or briefly busy; the next tick tries again
      }
    }
  })();
}
