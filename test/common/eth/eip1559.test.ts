import { describe, expect, it } from 'vitest';
import { Signature, Transaction, getBytes, hexlify } from 'ethers';
import { keccak256 } from '../../../src/common/eth/keccak.js';
import {
  serializeSigned,
  serializeUnsigned,
  signingHash,
  type Eip1559Fields,
  type Eip1559Signature,
} from '../../../src/common/eth/eip1559.js';
import { seededRandom, type Random } from './random.js';

const randomFields = (rnd: Random): Eip1559Fields => {
  // Calldata lengths around RLP's 55/56 and 255/256 boundaries, and long claims.
  const dataLengths = [0, 1, 55, 56, 255, 256, 4 + 32 * 12, 10_000];
  const maxFeePerGas = rnd.uint(256);
  const tip = rnd.uint(128);
  return {
    chainId: 1n + rnd.uint(64),
    nonce: rnd.int(3) === 0 ? 0 : rnd.int(2 ** 31),
    // ethers refuses a tip above the fee cap (as a node would).
    maxPriorityFeePerGas: tip > maxFeePerGas ? maxFeePerGas : tip,
    maxFeePerGas,
    gasLimit: rnd.uint(64),
    to: rnd.bytes(20),
    value: rnd.uint(256),
    data: rnd.bytes(rnd.int(2) === 0 ? dataLengths[rnd.int(dataLengths.length)]! : rnd.int(600)),
  };
};

const ethersTx = (f: Eip1559Fields) =>
  Transaction.from({
    type: 2,
    chainId: f.chainId,
    nonce: Number(f.nonce),
    maxPriorityFeePerGas: f.maxPriorityFeePerGas,
    maxFeePerGas: f.maxFeePerGas,
    gasLimit: f.gasLimit,
    to: hexlify(f.to),
    value: f.value,
    data: hexlify(f.data),
  });

describe('eip1559', () => {
  it("behavior: unsigned serialization and signing hash equal ethers' for random transactions", () => {
    const rnd = seededRandom();
    for (let i = 0; i < 200; i++) {
      const f = randomFields(rnd);
      const tx = ethersTx(f);
      const at = `seed ${rnd.seed}, case ${i}`;
      expect(hexlify(serializeUnsigned(f)), at).toBe(tx.unsignedSerialized);
      expect(hexlify(signingHash(f)), at).toBe(tx.unsignedHash);
    }
  });

  it("behavior: signed serialization and transaction hash equal ethers' for random signatures", () => {
    const rnd = seededRandom();
    for (let i = 0; i < 200; i++) {
      const f = randomFields(rnd);
      // r and s need not be a valid signature for the encoding; ethers only checks their width. Short values
      // check that leading zero bytes are dropped; s stays below n/2, which ethers insists on.
      const sig: Eip1559Signature = { yParity: rnd.int(2) as 0 | 1, r: 1n + rnd.uint(255), s: 1n + rnd.uint(254) };
      const tx = ethersTx(f);
      tx.signature = Signature.from({
        r: `0x${sig.r.toString(16).padStart(64, '0')}`,
        s: `0x${sig.s.toString(16).padStart(64, '0')}`,
        yParity: sig.yParity,
      });
      const at = `seed ${rnd.seed}, case ${i}`;
      const signed = serializeSigned(f, sig);
      expect(hexlify(signed), at).toBe(tx.serialized);
      expect(hexlify(keccak256(signed)), at).toBe(tx.hash);
      // And ethers reads our bytes back as the same transaction.
      expect(Transaction.from(hexlify(signed)).hash, at).toBe(tx.hash);
    }
  });

  it('behavior: a fixed transaction keeps its pinned bytes and hash', () => {
    // Pinned (and read back by ethers below) so that a change in both ethers and us cannot pass unseen.
    const f: Eip1559Fields = {
      chainId: 1n,
      nonce: 7,
      maxPriorityFeePerGas: 1_000_000_000n,
      maxFeePerGas: 30_000_000_000n,
      gasLimit: 21_000n,
      to: getBytes('0x000000000000000000000000000000000000dead'),
      value: 10n ** 18n,
      data: new Uint8Array(0),
    };
    const signed = serializeSigned(f, { yParity: 1, r: 1n, s: 2n });
    expect(hexlify(signed)).toMatchInlineSnapshot(
      `"0x02f30107843b9aca008506fc23ac0082520894000000000000000000000000000000000000dead880de0b6b3a764000080c0010102"`,
    );
    expect(hexlify(keccak256(signed))).toMatchInlineSnapshot(
      `"0x2d68e4e872d9008207345076a018fcd3f211fb49ca7d707a802bc54c53c92598"`,
    );
    const parsed = Transaction.from(hexlify(signed));
    expect([
      parsed.chainId,
      parsed.nonce,
      parsed.to,
      parsed.value,
      parsed.signature?.yParity,
      parsed.signature?.r,
    ]).toEqual([1n, 7, '0x000000000000000000000000000000000000dEaD', 10n ** 18n, 1, `0x${'00'.repeat(31)}01`]);
  });

  it('error: a malformed field is refused with its name', () => {
    const rnd = seededRandom(1);
    const f = randomFields(rnd);
    expect(() => serializeUnsigned({ ...f, to: new Uint8Array(19) })).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: to must be 20 bytes]`,
    );
    expect(() => serializeUnsigned({ ...f, chainId: 0n })).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: chainId must be a positive bigint, got 0]`,
    );
    expect(() => serializeUnsigned({ ...f, nonce: -1 })).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: nonce must be a non-negative safe integer, got -1]`,
    );
    expect(() => serializeUnsigned({ ...f, nonce: 1n << 64n })).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: nonce must be below 2^64, got 18446744073709551616]`,
    );
    expect(() => serializeUnsigned({ ...f, gasLimit: -1n })).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: gasLimit must be an integer from 0 to 2^256-1, got -1]`,
    );
    expect(() => serializeSigned(f, { yParity: 2 as 0, r: 1n, s: 1n })).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: yParity must be 0 or 1, got 2]`,
    );
  });
});
