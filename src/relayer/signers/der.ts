import { createPublicKey } from 'node:crypto';
import { BaseError } from '../../common/errors.js';

export class DerError extends BaseError {
  override name = 'DerError';
}

/** Order of the secp256k1 group. */
export const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** Reads one DER TLV at `offset`; only definite lengths (DER forbids the others). */
function readTlv(
  der: Uint8Array,
  offset: number,
  expectedTag: number,
  what: string,
): { value: Uint8Array; end: number } {
  if (der[offset] !== expectedTag)
    throw new DerError(`${what}: expected DER tag 0x${expectedTag.toString(16)} at byte ${offset}`);
  let length = der[offset + 1];
  let start = offset + 2;
  if (length === undefined) throw new DerError(`${what}: truncated`);
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 2) throw new DerError(`${what}: unsupported DER length encoding`);
    length = 0;
    for (let i = 0; i < bytes; i++) length = (length << 8) | (der[start + i] ?? 0);
    start += bytes;
  }
  const end = start + length;
  if (end > der.length) throw new DerError(`${what}: truncated`);
  return { value: der.subarray(start, end), end };
}

function toBigint(bytes: Uint8Array): bigint {
  return bytes.length === 0 ? 0n : BigInt(`0x${Buffer.from(bytes).toString('hex')}`);
}

/**
 * ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER } (RFC 3279), the form AWS KMS returns.
 * Both must lie in [1, n − 1]; anything else cannot be a valid secp256k1 signature.
 */
export function parseDerSignature(der: Uint8Array): { r: bigint; s: bigint } {
  const what = 'DER ECDSA signature';
  const seq = readTlv(der, 0, 0x30, what);
  if (seq.end !== der.length) throw new DerError(`${what}: trailing bytes after the SEQUENCE`);
  const r = readTlv(seq.value, 0, 0x02, what);
  const s = readTlv(seq.value, r.end, 0x02, what);
  if (s.end !== seq.value.length) throw new DerError(`${what}: trailing bytes inside the SEQUENCE`);
  // A set high bit would make the INTEGER negative: no signature encoder emits that.
  if ((r.value[0] ?? 0) & 0x80 || (s.value[0] ?? 0) & 0x80) throw new DerError(`${what}: negative r or s`);
  const rv = toBigint(r.value);
  const sv = toBigint(s.value);
  if (rv <= 0n || rv >= SECP256K1_N || sv <= 0n || sv >= SECP256K1_N)
    throw new DerError(`${what}: r or s out of range`);
  return { r: rv, s: sv };
}

/**
 * Ethereum accepts only s ≤ n/2 (EIP-2); (r, n − s) is the same ECDSA signature mirrored, which KMS and
 * other general-purpose signers produce about half the time.
 */
export function normalizeLowS(s: bigint): bigint {
  return s > SECP256K1_N / 2n ? SECP256K1_N - s : s;
}

/**
 * SubjectPublicKeyInfo (what KMS GetPublicKey returns) → 0x04 ‖ x ‖ y. Parsed by node:crypto, which
 * also checks that the point is on the curve; anything but a secp256k1 key is refused by name.
 */
export function uncompressedPointFromSpki(spki: Uint8Array): string {
  let jwk: { crv?: string; x?: string; y?: string };
  try {
    jwk = createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' }).export({ format: 'jwk' });
  } catch (err) {
    throw new DerError('public key: not a DER SubjectPublicKeyInfo', { cause: err });
  }
  if (jwk.crv !== 'secp256k1' || !jwk.x || !jwk.y)
    throw new DerError(`public key: curve ${jwk.crv ?? 'unknown'} is not secp256k1`);
  const coordinate = (b64url: string) => Buffer.from(b64url, 'base64url').toString('hex').padStart(64, '0');
  return `0x04${coordinate(jwk.x)}${coordinate(jwk.y)}`;
}
