/**
 * Hex <-> bytes for the transaction hot path (signing, hashing, calldata). Node's Buffer codec is native; a Buffer is a
 * Uint8Array, so the results go straight into keccak256 and the RLP encoder.
 */

const HEX_DIGITS = /^[0-9a-fA-F]*$/;

/** 0x-prefixed lower-case hex of the bytes. */
export function bytesToHex(bytes: Uint8Array): string {
  return `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`;
}

/**
 * Bytes of 0x-prefixed hex with an even number of digits. Throws on anything else: Buffer's decoder stops quietly at
 * the first bad digit, so a decoded length short of half the digits is an error. `what` names the value in the error.
 */
export function hexToBytes(hex: string, what = 'hex value'): Uint8Array {
  if (typeof hex !== 'string' || !hex.startsWith('0x')) throw new TypeError(`${what} must be a 0x-prefixed hex string`);
  const digits = hex.length - 2;
  const out = Buffer.from(hex.slice(2), 'hex');
  if (digits % 2 !== 0 || out.length * 2 !== digits) {
    throw new TypeError(
      `${what} is not hex (0x and an even number of hex digits): "${hex.length > 24 ? `${hex.slice(0, 24)}...` : hex}"`,
    );
  }
  return out;
}

/** Whether `hex` is 0x followed by exactly `bytes` bytes of hex digits (either case). */
export function isHexOfLength(hex: string, bytes: number): boolean {
  return (
    typeof hex === 'string' && hex.length === 2 + 2 * bytes && hex.startsWith('0x') && HEX_DIGITS.test(hex.slice(2))
  );
}
