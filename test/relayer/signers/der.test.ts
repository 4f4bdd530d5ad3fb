import { Signature, SigningKey, Wallet, keccak256, recoverAddress, toBeArray, toBeHex } from 'ethers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DerError,
  SECP256K1_N,
  normalizeLowS,
  parseDerSignature,
  uncompressedPointFromSpki,
} from '../../../src/relayer/signers/der.js';

function derInteger(value: bigint): number[] {
  const bytes = [...toBeArray(value)];
  if (bytes[0]! & 0x80) bytes.unshift(0);
  return [0x02, bytes.length, ...bytes];
}

function der(r: bigint, s: bigint): Uint8Array {
  const body = [...derInteger(r), ...derInteger(s)];
  return Uint8Array.from([0x30, body.length, ...body]);
}

const scalar = fc.bigInt({ min: 1n, max: SECP256K1_N - 1n });

describe('DER signatures', () => {
  it('behavior: any (r, s) in range round-trips through DER', () => {
    fc.assert(
      fc.property(scalar, scalar, (r, s) => {
        expect(parseDerSignature(der(r, s))).toEqual({ r, s });
      }),
    );
  });

  it('behavior: the mirrored high-s signature normalises to the one that recovers the signer', () => {
    const key = new SigningKey(Wallet.createRandom().privateKey);
    const address = new Wallet(key.privateKey).address;
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 64 }), (data) => {
        const digest = keccak256(data);
        const sig = key.sign(digest);
        const low = normalizeLowS(SECP256K1_N - BigInt(sig.s));
        expect(low).toBe(BigInt(sig.s));
        expect(recoverAddress(digest, Signature.from({ r: sig.r, s: toBeHex(low, 32), v: sig.v }))).toBe(address);
      }),
      { numRuns: 20 },
    );
  });

  it('error: malformed encodings are refused', () => {
    expect(() => parseDerSignature(Uint8Array.from([0x31, 0x00]))).toThrow(DerError);
    expect(() => parseDerSignature(Uint8Array.from([...der(1n, 2n), 0x00]))).toThrow('trailing bytes');
    expect(() => parseDerSignature(der(SECP256K1_N, 2n))).toThrow('out of range');
    expect(() => parseDerSignature(Uint8Array.from([0x30, 0x06, 0x02, 0x01, 0x81, 0x02, 0x01, 0x01]))).toThrow(
      'negative',
    );
  });
});

describe('SubjectPublicKeyInfo', () => {
  it('error: a P-256 key is refused by curve name', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    expect(() => uncompressedPointFromSpki(publicKey.export({ type: 'spki', format: 'der' }))).toThrow(
      'curve P-256 is not secp256k1',
    );
  });
});
