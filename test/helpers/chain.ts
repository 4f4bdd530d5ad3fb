import { Wallet, keccak256, type JsonRpcProvider } from 'ethers';
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

/**
 * Sends one sender's signed transactions (consecutive nonces from `firstNonce`) as raw bytes, `perBatch` at a
 * time `pauseMs` apart, then waits up to `timeoutMs` for the last one's receipt, sending again whatever the
 * node lacks meanwhile (its "already known" answers are ignored): under CI's load anvil has answered a send
 * and kept no such transaction, and every later nonce then waited behind the gap for ever.
 */
export async function sendRawBurst(
  provider: JsonRpcProvider,
  sender: string,
  firstNonce: number,
  raws: string[],
  options: { perBatch?: number; pauseMs?: number; timeoutMs?: number } = {},
): Promise<void> {
  const perBatch = options.perBatch ?? raws.length;
  for (let i = 0; i < raws.length; i += perBatch) {
    await Promise.all(raws.slice(i, i + perBatch).map((raw) => provider.send('eth_sendRawTransaction', [raw])));
    if (options.pauseMs && i + perBatch < raws.length) await new Promise((r) => setTimeout(r, options.pauseMs));
  }
  const lastHash = keccak256(raws.at(-1)!);
  await waitFor(`the last of ${raws.length} transactions to be mined`, async () => {
    if (await provider.send('eth_getTransactionReceipt', [lastHash])) return true;
    const mined = await provider.getTransactionCount(sender, 'latest');
    await Promise.all(raws.slice(Math.max(0, mined - firstNonce)).map((raw) => provider.send('eth_sendRawTransaction', [raw]).catch(() => undefined)));
    return undefined;
  }, options.timeoutMs ?? 120_000, 1_000);
}
