import { describe, expect, it } from 'vitest';
import { toHex, word } from '../../src/state/bytes.js';
import { blockChanges } from '../../src/state/diff.js';

const A = '0x00000000000000000000000000000000000000aa';
const s = (n: number) => toHex(word(n));

describe('prestate diffs to account changes', () => {
  it("behavior: folds a block's transactions: changed fields, new slots, slots set to zero", () => {
    const changes = blockChanges([
      {
        result: {
          pre: { [A]: { balance: '0x10', nonce: 1, storage: { [s(1)]: s(5) } } },
          post: { [A]: { balance: '0x20', storage: { [s(1)]: s(6), [s(2)]: s(7) } } },
        },
      },
      // A slot present before but missing after was cleared.
      {
        result: { pre: { [A]: { balance: '0x20', nonce: 1, storage: { [s(2)]: s(7) } } }, post: { [A]: { nonce: 2 } } },
      },
    ]);
    expect(changes).toHaveLength(1);
    const a = changes[0]!;
    expect(a).toMatchObject({
      address: A,
      deleted: false,
      balance: 0x20n,
      nonce: 2n,
      before: { balance: 0x10n, nonce: 1n },
    });
    expect([...a.storage].map(([k, v]) => [k, toHex(v)])).toEqual([
      [s(1), s(6)],
      [s(2), s(0)],
    ]);
  });

  it('behavior: an account in pre but not in post is deleted; coming back in the same block starts from nothing', () => {
    const deleted = blockChanges([{ result: { pre: { [A]: { balance: '0x1', code: '0x6000' } }, post: {} } }]);
    expect(deleted[0]).toMatchObject({ deleted: true, clearStorage: true });
    const reborn = blockChanges([
      { result: { pre: { [A]: { balance: '0x1', code: '0x6000', storage: { [s(1)]: s(1) } } }, post: {} } },
      { result: { pre: { [A]: { balance: '0x0' } }, post: { [A]: { balance: '0x5', code: '0x6001' } } } },
    ])[0]!;
    expect(reborn).toMatchObject({ deleted: false, clearStorage: true, balance: 5n, nonce: 0n });
    expect(toHex(reborn.code!)).toBe('0x6001');
    expect(reborn.storage.size).toBe(0);
  });

  it('error: a trace entry without a diff is refused', () => {
    expect(() => blockChanges([{ result: null as never }])).toThrow('trace entry 0 has no prestate diff');
  });
});
