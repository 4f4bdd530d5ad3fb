import { describe, expect, it } from 'vitest';
import { Wallet, hexlify, randomBytes } from 'ethers';
import { foreignChainReason, signedChainId } from '../../src/relayer/tx-chain-id.js';

/** The chain id read from a signed transaction's bytes against ethers' own signing, for every envelope we may meet. */
describe('signedChainId', () => {
  const wallet = Wallet.createRandom();
  const base = { nonce: 7, to: Wallet.createRandom().address, gasLimit: 100_000n, value: 1n };
  const ids = [1n, 59_144n, 2n ** 32n + 5n, 2n ** 64n - 1n];

  it('behavior: matches the chain id ethers signed for (legacy EIP-155, 2930, 1559), short and long calldata', async () => {
    for (const chainId of ids) {
      for (const data of ['0x', hexlify(randomBytes(3_000))]) {
        const signed = [
          await wallet.signTransaction({ ...base, data, type: 0, chainId, gasPrice: 10n ** 9n }),
          await wallet.signTransaction({ ...base, data, type: 1, chainId, gasPrice: 10n ** 9n }),
          await wallet.signTransaction({
            ...base,
            data,
            type: 2,
            chainId,
            maxFeePerGas: 10n ** 10n,
            maxPriorityFeePerGas: 1n,
          }),
        ];
        for (const raw of signed) {
          expect(signedChainId(raw)).toBe(chainId);
          expect(foreignChainReason(raw, chainId)).toBeUndefined();
          expect(foreignChainReason(raw, chainId + 1n)).toBe(
            `it was signed for chain id ${chainId}, the destination is chain id ${chainId + 1n}`,
          );
        }
      }
    }
  });

  it('error: a legacy transaction without a chain id, and unreadable bytes, are never ours to send', async () => {
    const legacy = await wallet.signTransaction({ ...base, data: '0x', type: 0, gasPrice: 1n });
    expect(signedChainId(legacy)).toBeUndefined();
    expect(foreignChainReason(legacy, 1n)).toBe('it was signed without a chain id (pre-EIP-155)');
    expect(foreignChainReason('0x02f8', 1n)).toMatch(/^its stored signed bytes cannot be read/);
    expect(foreignChainReason('0x', 1n)).toMatch(/^its stored signed bytes cannot be read/);
  });
});
