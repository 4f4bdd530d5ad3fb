import { describe, expect, it } from 'vitest';
import { Transaction, Wallet, hexlify } from 'ethers';
import { createSigner, toTransaction, type UnsignedTx } from '../../../src/relayer/signer.js';
import { bytesToHex, hexToBytes } from '../../../src/common/eth/hex.js';
import { seededRandom, type Random } from './random.js';

const randomTx = (rnd: Random, from: string): UnsignedTx => {
  const maxFeePerGas = rnd.uint(128);
  const tip = rnd.uint(64);
  const dataLengths = [0, 4, 4 + 32 * 7, 4 + 32 * 20, 5_000];
  return {
    chainId: 1n + rnd.uint(40),
    nonce: rnd.int(2 ** 31),
    // Self-transfers are what the relayer signs to fill a nonce gap.
    to: rnd.int(5) === 0 ? from : rnd.hex(20),
    data: rnd.hex(dataLengths[rnd.int(dataLengths.length)]!),
    value: rnd.int(3) === 0 ? 0n : rnd.uint(96),
    gasLimit: 21_000n + rnd.uint(24),
    maxFeePerGas,
    maxPriorityFeePerGas: tip > maxFeePerGas ? maxFeePerGas : tip,
  };
};

describe('private-key signer', () => {
  it("behavior: signs exactly what ethers' Wallet signs (same RFC 6979 signature, low s), for random keys and transactions", async () => {
    const rnd = seededRandom();
    for (let k = 0; k < 8; k++) {
      const key = rnd.hex(32);
      const wallet = new Wallet(key);
      const signer = await createSigner({ type: 'private-key', privateKey: key });
      expect(signer.address, `seed ${rnd.seed}, key ${k}`).toBe(wallet.address.toLowerCase());
      for (let i = 0; i < 25; i++) {
        const tx = randomTx(rnd, signer.address);
        const at = `seed ${rnd.seed}, key ${k}, case ${i}`;
        const ours = await signer.signTransaction(tx);
        expect(ours, at).toBe(await wallet.signTransaction(toTransaction(tx)));
        const parsed = Transaction.from(ours);
        expect(parsed.from?.toLowerCase(), at).toBe(signer.address);
        expect(parsed.signature!.s <= '0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0', at).toBe(
          true,
        );
      }
    }
  });

  it('error: a malformed private key or transaction field is refused with what is wrong', async () => {
    await expect(
      createSigner({ type: 'private-key', privateKey: '0x1234' }),
    ).rejects.toThrowErrorMatchingInlineSnapshot(
      `[TypeError: the signer private key must be 0x followed by 64 hex digits]`,
    );
    await expect(
      createSigner({ type: 'private-key', privateKey: `0x${'00'.repeat(32)}` }),
    ).rejects.toThrowErrorMatchingInlineSnapshot(
      `[RangeError: the signer private key is not a valid secp256k1 key (0, or not below the curve order)]`,
    );
    await expect(
      createSigner({ type: 'private-key', privateKey: `0x${'ff'.repeat(32)}` }),
    ).rejects.toThrowErrorMatchingInlineSnapshot(
      `[RangeError: the signer private key is not a valid secp256k1 key (0, or not below the curve order)]`,
    );
    const signer = await createSigner({ type: 'private-key', privateKey: `0x${'11'.repeat(32)}` });
    const tx = randomTx(seededRandom(1), signer.address);
    await expect(signer.signTransaction({ ...tx, to: '0x1234' })).rejects.toThrowErrorMatchingInlineSnapshot(
      `[TypeError: to must be a 20-byte 0x-prefixed hex address, got "0x1234"]`,
    );
    await expect(signer.signTransaction({ ...tx, data: '0x123' })).rejects.toThrowErrorMatchingInlineSnapshot(
      `[TypeError: data is not hex (0x and an even number of hex digits): "0x123"]`,
    );
    await expect(signer.signTransaction({ ...tx, data: '0xzz' })).rejects.toThrowErrorMatchingInlineSnapshot(
      `[TypeError: data is not hex (0x and an even number of hex digits): "0xzz"]`,
    );
  });

  it('behavior: the private key stays out of JSON and logs', async () => {
    const key = `0x${'22'.repeat(32)}`;
    const signer = await createSigner({ type: 'private-key', privateKey: key });
    expect(JSON.stringify(signer)).not.toContain('2222');
  });
});

describe('hex', () => {
  it('behavior: bytes and hex round-trip, upper case read, lower case written', () => {
    const rnd = seededRandom();
    for (let i = 0; i < 50; i++) {
      const b = rnd.bytes(rnd.int(300));
      expect(bytesToHex(b)).toBe(hexlify(b));
      expect(hexlify(hexToBytes(bytesToHex(b).toUpperCase().replace('0X', '0x')))).toBe(hexlify(b));
    }
    expect(bytesToHex(new Uint8Array(0))).toBe('0x');
    expect(bytesToHex(Uint8Array.of(1, 2, 3).subarray(1))).toBe('0x0203');
  });

  it('error: anything but even-length 0x-hex is refused (Buffer would stop quietly at the bad digit)', () => {
    expect(() => hexToBytes('1234')).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: hex value must be a 0x-prefixed hex string]`,
    );
    expect(() => hexToBytes('0x123', 'data')).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: data is not hex (0x and an even number of hex digits): "0x123"]`,
    );
    expect(() => hexToBytes('0x12g4', 'data')).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: data is not hex (0x and an even number of hex digits): "0x12g4"]`,
    );
    expect(() => hexToBytes('0x12 4')).toThrow(TypeError);
  });
});
