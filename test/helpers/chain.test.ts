import { Wallet, keccak256 } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProvider } from '../../src/common/chain/provider.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { sendRawBurst } from './chain.js';

/**
 * sendRawBurst on a real anvil, in the state CI met: a transaction parked in the pool waiting for a nonce the
 * chain has already passed. Made here on purpose: nonce n+1 sent while the account is at n waits for n; then
 * anvil_setNonce moves the account to n+1 without n ever being pooled or mined, so nothing will release it.
 */
describe('sendRawBurst', () => {
  let anvil: Anvil;
  let provider: ReturnType<typeof createProvider>;
  beforeAll(async () => {
    anvil = await startAnvil({ port: 0, chainId: 31_998, accounts: 2 });
    provider = createProvider(anvil.url, 31_998, { pollingInterval: 50 });
  });
  afterAll(async () => {
    provider?.destroy();
    await anvil?.stop();
  });

  it('behavior: a transaction anvil parked for good is dropped, sent again and mined, with the rest of the burst', async () => {
    const wallet = new Wallet(devAccounts(2)[1]!.privateKey, provider);
    const nonce = await provider.getTransactionCount(wallet.address, 'latest');
    const fees = await provider.getFeeData();
    const raws = await Promise.all([1, 2].map((i) => wallet.signTransaction({
      type: 2, chainId: 31_998, nonce: nonce + i, to: wallet.address, value: 1n, gasLimit: 21_000,
      maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    })));
    await provider.send('eth_sendRawTransaction', [raws[0]]);
    await provider.send('anvil_setNonce', [wallet.address, `0x${(nonce + 1).toString(16)}`]);
    await provider.send('evm_mine', []);
    // The state CI reported: the account at n+1, its transaction for n+1 queued, and sending it again changes nothing.
    expect(await provider.send('txpool_status', [])).toMatchObject({ pending: '0x0', queued: '0x1' });
    await expect(provider.send('eth_sendRawTransaction', [raws[0]])).rejects.toThrow(/already imported|already known/i);
    await provider.send('evm_mine', []);
    expect(await provider.send('eth_getTransactionReceipt', [keccak256(raws[0]!)])).toBeNull();

    await sendRawBurst(provider, wallet.address, nonce + 1, raws, { timeoutMs: 15_000 });
    expect(await provider.getTransactionCount(wallet.address, 'latest')).toBe(nonce + 3);
    for (const raw of raws) expect((await provider.getTransactionReceipt(keccak256(raw)))?.status).toBe(1);
  });
});
