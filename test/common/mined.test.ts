import { Wallet, parseEther } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mined } from '../../src/common/chain/mined.js';
import { createProvider } from '../../src/common/chain/provider.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';

/**
 * mined() on a real anvil: a mined transfer's receipt, a reverted call refused, a never-mined one named at its
 * deadline.
 */
describe('mined', () => {
  let anvil: Anvil;
  let wallet: Wallet;
  beforeAll(async () => {
    anvil = await startAnvil({ port: 0, chainId: 31_999, accounts: 3 });
    wallet = new Wallet(devAccounts(3)[2]!.privateKey, createProvider(anvil.url, 31_999, { pollingInterval: 10 }));
  });
  afterAll(async () => {
    wallet?.provider?.destroy();
    await anvil?.stop();
  });

  it('returns the receipt of a mined transaction', async () => {
    const receipt = await mined(wallet.sendTransaction({ to: wallet.address, value: parseEther('1') }));
    expect(receipt.status).toBe(1);
    expect(receipt.blockNumber).toBeGreaterThan(0);
  });

  it('refuses a reverted transaction, naming it', async () => {
    // Runtime code that reverts whatever it is called with: PUSH1 0 PUSH1 0 REVERT, deployed by a tiny initcode.
    const deploy = await mined(wallet.sendTransaction({ data: '0x6005600c60003960056000f360006000fd' }));
    const target = deploy.contractAddress!;
    const sent = await wallet.sendTransaction({ to: target, data: '0x', gasLimit: 100_000n });
    await expect(mined(sent)).rejects.toThrow(new RegExp(`transaction ${sent.hash} .* reverted in block`));
  });

  it('gives up at its deadline on a transaction that is never mined, naming it', async () => {
    // A nonce two ahead of the account's: the node queues it for good.
    const nonce = (await wallet.getNonce('pending')) + 2;
    const sent = await wallet.sendTransaction({ to: wallet.address, value: 1n, nonce });
    await expect(mined(sent, 500)).rejects.toThrow(
      new RegExp(`transaction ${sent.hash} \\(nonce ${nonce} .*not mined within 500 ms`),
    );
  });
});
