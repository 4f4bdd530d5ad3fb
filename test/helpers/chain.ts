import { Wallet } from 'ethers';
import { createProvider } from '../../src/common/chain/provider.js';
import type { DevnetState } from '../../src/devnet/state-file.js';

/** Providers and a signer for one reserved test account on both devnet chains. */
export function devnetSigners(state: DevnetState, accountIndex: number) {
  const l1Provider = createProvider(state.l1.rpcUrl, state.l1.chainId, { pollingInterval: 50 });
  const l2Provider = createProvider(state.l2.upstreamRpcUrl, state.l2.chainId, { pollingInterval: 50 });
  const account = state.accounts[accountIndex]!;
  return {
    account,
    l1Provider,
    l2Provider,
    l1: new Wallet(account.privateKey, l1Provider),
    l2: new Wallet(account.privateKey, l2Provider),
    destroy() {
      l1Provider.destroy();
      l2Provider.destroy();
    },
  };
}

/** Polls until `check` returns a value other than undefined, or fails naming what it waited for. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 45_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
