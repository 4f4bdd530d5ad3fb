import { describe, expect, it } from 'vitest';
import { encodeRlp, hexlify } from 'ethers';
import { rlpEncode, rlpLength, uintBytes, type RlpItem } from '../../../src/common/eth/rlp.js';
import { seededRandom } from './random.js';

/** ethers' encoder takes hex strings for byte strings. */
type HexItem = string | HexItem[];
const asHex = (item: RlpItem): HexItem => (item instanceof Uint8Array ? hexlify(item) : item.map(asHex));

describe('rlp', () => {
  it('args: the boundary cases of the yellow paper encode as specified', () => {
    const hex = (item: RlpItem) => hexlify(rlpEncode(item));
    expect(hex(new Uint8Array(0))).toBe('0x80');
    expect(hex(Uint8Array.of(0x00))).toBe('0x00');
    expect(hex(Uint8Array.of(0x7f))).toBe('0x7f');
    expect(hex(Uint8Array.of(0x80))).toBe('0x8180');
    expect(hex([])).toBe('0xc0');
    expect(hex([[], [[]], [[], [[]]]])).toBe('0xc7c0c1c0c3c0c1c0');
    expect(hex(new Uint8Array(55))).toBe(`0xb7${'00'.repeat(55)}`);
    expect(hex(new Uint8Array(56))).toBe(`0xb838${'00'.repeat(56)}`);
    expect(hex(new Uint8Array(1024))).toBe(`0xb90400${'00'.repeat(1024)}`);
    // A three-byte length, and a list longer than 55 bytes.
    expect(hex(new Uint8Array(70_000)).slice(0, 10)).toBe('0xba011170');
    expect(hex([new Uint8Array(60)]).slice(0, 10)).toBe('0xf83eb83c');
  });

  it('behavior: random nested items encode as ethers encodes them', () => {
    const rnd = seededRandom();
    // Lengths around every prefix boundary: 0, 1, 55/56 and the 256-byte two-byte length.
    const lengths = [0, 1, 2, 54, 55, 56, 57, 255, 256, 257, 1000];
    const item = (depth: number): RlpItem => {
      if (depth > 3 || rnd.int(3) > 0) {
        const n = rnd.int(4) === 0 ? lengths[rnd.int(lengths.length)]! : rnd.int(40);
        return rnd.bytes(n);
      }
      return Array.from({ length: rnd.int(8) }, () => item(depth + 1));
    };
    for (let i = 0; i < 300; i++) {
      const x = item(0);
      const encoded = rlpEncode(x);
      expect(hexlify(encoded), `seed ${rnd.seed}, case ${i}`).toBe(encodeRlp(asHex(x)));
      expect(encoded.length).toBe(rlpLength(x));
    }
  });

  it('behavior: a transaction type byte is written before the encoding', () => {
    expect(hexlify(rlpEncode([Uint8Array.of(1)], 2))).toBe('0x02c101');
  });

  it('args: integers are minimal big-endian, zero is the empty string', () => {
    expect(hexlify(uintBytes(0))).toBe('0x');
    expect(hexlify(uintBytes(0n))).toBe('0x');
    expect(hexlify(uintBytes(127))).toBe('0x7f');
    expect(hexlify(uintBytes(256))).toBe('0x0100');
    expect(hexlify(uintBytes(0x1234567n))).toBe('0x01234567');
    expect(hexlify(uintBytes((1n << 256n) - 1n))).toBe(`0x${'ff'.repeat(32)}`);
  });

  it('error: integers outside uint256, negative or unsafe are refused', () => {
    expect(() => uintBytes(-1, 'nonce')).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: nonce must be a non-negative safe integer, got -1]`,
    );
    expect(() => uintBytes(1.5)).toThrow(RangeError);
    expect(() => uintBytes(2 ** 53)).toThrow(RangeError);
    expect(() => uintBytes(1n << 256n, 'value')).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: value must be an integer from 0 to 2^256-1, got 115792089237316195423570985008687907853269984665640564039457584007913129639936]`,
    );
    expect(() => rlpEncode([], 0x80)).toThrow(RangeError);
  });
});
