/**
 * Recursive Length Prefix encoding (Ethereum yellow paper, appendix B) of byte strings and lists, written
 * into one buffer sized up front: the relayer encodes every claim transaction it signs, twice (to sign it
 * and once signed), and a buffer per item plus a concatenation per list was most of that cost in ethers.
 * Encoding only: the relayer never needs to decode its own transactions.
 */

/** A byte string or a list of items. */
export type RlpItem = Uint8Array | readonly RlpItem[];

const MAX_UINT256 = (1n << 256n) - 1n;

/** Bytes taken by the length prefix of a payload of `length` bytes (beyond the first byte). */
function lengthOfLength(length: number): number {
  let n = 0;
  for (let l = length; l > 0; l = Math.floor(l / 256)) n++;
  return n;
}

/** Encoded size of an item. */
export function rlpLength(item: RlpItem): number {
  const bytes = item instanceof Uint8Array;
  if (bytes && item.length === 1 && item[0]! < 0x80) return 1;
  const payload = bytes ? item.length : listPayloadLength(item);
  return payload < 56 ? 1 + payload : 1 + lengthOfLength(payload) + payload;
}

function listPayloadLength(items: readonly RlpItem[]): number {
  let n = 0;
  for (const item of items) n += rlpLength(item);
  return n;
}

/** Writes the prefix of a string (`short` 0x80) or list (0xc0) payload of `length` bytes; returns the next offset. */
function writePrefix(out: Uint8Array, at: number, short: number, length: number): number {
  if (length < 56) {
    out[at] = short + length;
    return at + 1;
  }
  const n = lengthOfLength(length);
  out[at] = short + 55 + n;
  for (let i = n, l = length; i > 0; i--, l = Math.floor(l / 256)) out[at + i] = l % 256;
  return at + 1 + n;
}

function write(out: Uint8Array, at: number, item: RlpItem): number {
  if (item instanceof Uint8Array) {
    if (item.length === 1 && item[0]! < 0x80) {
      out[at] = item[0]!;
      return at + 1;
    }
    const start = writePrefix(out, at, 0x80, item.length);
    out.set(item, start);
    return start + item.length;
  }
  let next = writePrefix(out, at, 0xc0, listPayloadLength(item));
  for (const child of item) next = write(out, next, child);
  return next;
}

/**
 * The RLP encoding of `item`. `typePrefix` (an EIP-2718 transaction type, 0x00..0x7f) is written as the
 * first byte, before the encoding, in the same buffer.
 */
export function rlpEncode(item: RlpItem, typePrefix?: number): Uint8Array {
  const head = typePrefix === undefined ? 0 : 1;
  if (typePrefix !== undefined && !(Number.isInteger(typePrefix) && typePrefix >= 0 && typePrefix < 0x80)) {
    throw new RangeError(`transaction type must be an integer from 0 to 0x7f, got ${typePrefix}`);
  }
  const out = new Uint8Array(head + rlpLength(item));
  if (typePrefix !== undefined) out[0] = typePrefix;
  const end = write(out, head, item);
  if (end !== out.length) throw new Error(`RLP encoder wrote ${end} of ${out.length} bytes`);
  return out;
}

const EMPTY = new Uint8Array(0);

/**
 * An unsigned integer as RLP wants it: big-endian, no leading zero bytes, zero as the empty string.
 * Bounded to uint256 (no Ethereum field is wider); `what` names the value in the error.
 */
export function uintBytes(value: bigint | number, what = 'integer'): Uint8Array {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new RangeError(`${what} must be a non-negative safe integer, got ${value}`);
    if (value === 0) return EMPTY;
    if (value < 0x100) return Uint8Array.of(value);
    value = BigInt(value);
  }
  if (typeof value !== 'bigint' || value < 0n || value > MAX_UINT256)
    throw new RangeError(`${what} must be an integer from 0 to 2^256-1, got ${String(value)}`);
  if (value === 0n) return EMPTY;
  const hex = value.toString(16);
  return Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, 'hex');
}
