import { describe, expect, it } from 'vitest';
import { hexlify, keccak256 as ethersKeccak } from 'ethers';
import { concat, fromHex, toHex, word } from '../../src/state/bytes.js';
import {
  ACCOUNT_VALUE_LENGTH,
  decodeAccountValue,
  decodeLeafOpening,
  decodeRootNode,
  encodeAccountValue,
  encodeLeafOpening,
  encodeRootNode,
  treeConstants,
} from '../../src/state/encoding.js';
import { ethersKeccakHashProvider, keccakHashProvider } from '../../src/state/hash.js';
import { keccak256 } from '../../src/common/eth/keccak.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { templateRows } from '../../src/state/tree.js';
import { treeRoot } from '../../src/state/tree-read.js';

describe('state tree encodings', () => {
  it("behavior: the tree's keccak256 equals ethers' for every length around the 136-byte rate", () => {
    for (let n = 0; n <= 300; n++) {
      const data = Uint8Array.from({ length: n }, (_, i) => (i * 31 + n) & 0xff);
      expect(hexlify(keccak256(data)), `length ${n}`).toBe(ethersKeccak(data));
    }
  });

  it('behavior: both hash providers give the same empty-tree constants', () => {
    const a = treeConstants(keccakHashProvider);
    const b = treeConstants(ethersKeccakHashProvider);
    expect(toHex(a.emptyRoot)).toBe(toHex(b.emptyRoot));
    expect(toHex(a.emptyCodeHash)).toBe('0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
    // The empty root is H(nextFreeNode = 2 ‖ subRoot) of the two sentinels.
    const rows = templateRows(a);
    const rootNode = rows.get(41 * 2 ** 40)!;
    expect(decodeRootNode(rootNode).nextFreeNode).toBe(2);
    expect(toHex(keccak256(rootNode))).toBe(toHex(a.emptyRoot));
  });

  it('behavior: a tree that was never written reads as the empty tree', async () => {
    const c = treeConstants(keccakHashProvider);
    const root = await new MemoryStore().read(0n, (r) => treeRoot(c, r, '0x' + '00'.repeat(20)));
    expect(toHex(root)).toBe(toHex(c.emptyRoot));
  });

  it('behavior: leaf openings, root nodes and account values round-trip through their byte encodings', () => {
    const opening = { prev: 2 ** 40 - 1, next: 7, hKey: keccak256(word(1)), hValue: keccak256(word(2)) };
    const bytes = encodeLeafOpening(opening);
    expect(bytes.length).toBe(128);
    expect(toHex(bytes.subarray(0, 32))).toBe(toHex(word(2 ** 40 - 1)));
    expect(decodeLeafOpening(bytes)).toEqual(opening);
    expect(decodeRootNode(encodeRootNode(12, keccak256(word(3))))).toEqual({
      nextFreeNode: 12,
      subRoot: keccak256(word(3)),
    });
    const account = {
      nonce: 5n,
      balance: 10n ** 24n,
      storageRoot: keccak256(word(4)),
      codeHash: keccak256(word(5)),
      keccakCodeHash: keccak256(word(6)),
      codeSize: 1234n,
    };
    const value = encodeAccountValue(account);
    expect(value.length).toBe(ACCOUNT_VALUE_LENGTH);
    expect(toHex(value)).toBe(
      toHex(
        concat(word(5n), word(10n ** 24n), account.storageRoot, account.codeHash, account.keccakCodeHash, word(1234n)),
      ),
    );
    expect(decodeAccountValue(value)).toEqual(account);
  });

  it('error: malformed encodings are refused with the reason', () => {
    expect(() => decodeLeafOpening(new Uint8Array(127))).toThrow('a leaf opening is 128 bytes, got 127');
    expect(() => decodeLeafOpening(concat(word(2n ** 40n), new Uint8Array(96)))).toThrow(
      /prevLeafIndex 1099511627776 is outside the tree/,
    );
    expect(() => decodeAccountValue(new Uint8Array(191))).toThrow('an account value is 192 bytes, got 191');
    expect(() => fromHex('0x123')).toThrow(/not an even-length hex string/);
    expect(() => fromHex('0xzz')).toThrow(/not an even-length hex string/);
  });
});
