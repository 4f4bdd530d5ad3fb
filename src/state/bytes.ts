/** Small byte helpers shared by the tree, the stores and the verifier (no dependencies but Node's Buffer). */

export type Bytes = Uint8Array;

/** Lowercase hex without 0x (Node's native encoder: ~4x a loop over a table, and a flat string). */
export const bareHex = (bytes: Bytes): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');

/** 0x-prefixed lowercase hex. */
export const toHex = (bytes: Bytes): string => `0x${bareHex(bytes)}`;

const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) NIBBLE[48 + i] = i;
for (let i = 0; i < 6; i++) NIBBLE[65 + i] = NIBBLE[97 + i] = 10 + i;

/** Parses 0x-prefixed (or bare) hex with an even number of digits; throws on anything else. */
export function fromHex(hex: string): Bytes {
  const start = hex.startsWith('0x') || hex.startsWith('0X') ? 2 : 0;
  const len = hex.length - start;
  if (len % 2 !== 0) throw new Error(`not an even-length hex string: "${hex.slice(0, 20)}"`);
  const out = new Uint8Array(len / 2);
  for (let i = 0; i < out.length; i++) {
    const hi = NIBBLE[hex.charCodeAt(start + 2 * i)] ?? -1;
    const lo = NIBBLE[hex.charCodeAt(start + 2 * i + 1)] ?? -1;
    if (hi < 0 || lo < 0) throw new Error(`not an even-length hex string: "${hex.slice(0, 20)}"`);
    out[i] = (hi << 4) | lo;
  }
  return out;
}

export function concat(...parts: Bytes[]): Bytes {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export function equal(a: Bytes, b: Bytes): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function isZero(a: Bytes): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== 0) return false;
  return true;
}

/** A 32-byte big-endian word of an unsigned integer (throws when it does not fit). */
export function word(n: bigint | number): Bytes {
  let v = BigInt(n);
  if (v < 0n || v >= 1n << 256n) throw new Error(`value out of uint256 range: ${v}`);
  const out = new Uint8Array(32);
  for (let i = 31; i >= 0 && v > 0n; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

/** The unsigned integer in a big-endian byte string. */
export function toBigInt(bytes: Bytes): bigint {
  return bytes.length === 0 ? 0n : BigInt(toHex(bytes));
}

/** Left-pads to 32 bytes (addresses and short storage keys); longer input is refused. */
export function padWord(bytes: Bytes): Bytes {
  if (bytes.length > 32) throw new Error(`more than 32 bytes (${bytes.length})`);
  const out = new Uint8Array(32);
  out.set(bytes, 32 - bytes.length);
  return out;
}

export function quantity(n: bigint | number): string {
  return `0x${BigInt(n).toString(16)}`;
}
