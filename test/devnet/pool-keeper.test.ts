import { Wallet, keccak256 } from 'ethers';
import { afterAll, describe, expect, it } from 'vitest';
import { createProvider } from '../../src/common/chain/provider.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { waitFor } from '../helpers/chain.js';

/**
 * The pool keeper on a real anvil, in the state CI met ("1 of 3 mined, txpool pending 0, queued 2"): a transaction
 * parked in the pool for a nonce the chain has passed. Made here on purpose: nonce n+1 sent while the account is
 * at n waits for n; anvil_setNonce then moves the account to n+1 without n ever being pooled or mined, so nothing
 * releases it. Without the keeper it stays parked (and a re-send changes nothing); with it, it is mined.
 */
describe('pool keeper', () => {
  const chains: Anvil[] = [];
  afterAll(async () => {
    await Promise.all(chains.map((c) => c.stop()));
  });

  async function park(poolKeeperMs: number) {
    const chainId = 31_998;
    const anvil = await startAnvil({ port: 0, chainId, accounts: 2, poolKeeperMs });
    chains.push(anvil);
    const provider = createProvider(anvil.url, chainId, { pollingInterval: 50 });
    const wallet = new Wallet(devAccounts(2)[1]!.privateKey, provider);
    const nonce = await provider.getTransactionCount(wallet.address, 'latest');
    const fees = await provider.getFeeData();
    const raws = await Promise.all(
      [1, 2, 5].map((i) =>
        wallet.signTransaction({
          type: 2,
          chainId,
          nonce: nonce + i,
          to: wallet.address,
          value: 1n,
          gasLimit: 21_000,
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        }),
      ),
    );
    await provider.send('eth_sendRawTransaction', [raws[0]]);
    await provider.send('anvil_setNonce', [wallet.address, `0x${(nonce + 1).toString(16)}`]);
    await provider.send('evm_mine', []);
    await provider.send('eth_sendRawTransaction', [raws[1]]);
    await provider.send('eth_sendRawTransaction', [raws[2]]);
    return { provider, wallet, nonce, hashes: raws.slice(0, 2).map((r) => keccak256(r)), raws };
  }

  it("behavior: without the keeper, anvil keeps a transaction at its sender's nonce queued for good", async () => {
    const { provider, raws, hashes } = await park(0);
    expect(await provider.send('txpool_status', [])).toMatchObject({ pending: '0x0', queued: '0x3' });
    await expect(provider.send('eth_sendRawTransaction', [raws[0]])).rejects.toThrow(/already imported|already known/i);
    await provider.send('evm_mine', []);
    expect(await provider.send('eth_getTransactionReceipt', [hashes[0]])).toBeNull();
    provider.destroy();
  });

  it('behavior: with the keeper (the default), the parked transaction and the one behind it are mined, nobody re-sending', async () => {
    const { provider, wallet, nonce, hashes } = await park(100);
    await waitFor(
      'both parked transactions to be mined',
      async () => ((await provider.getTransactionCount(wallet.address, 'latest')) === nonce + 3 ? true : undefined),
      10_000,
      50,
    );
    for (const hash of hashes) expect((await provider.getTransactionReceipt(hash))?.status).toBe(1);
    // A gap a client made is not the keeper's to fill: nonce n+5, sent before the release, is still queued after it.
    expect(await provider.send('txpool_status', [])).toMatchObject({ pending: '0x0', queued: '0x1' });
    provider.destroy();
  });
});
