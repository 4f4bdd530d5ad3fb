import { describe, expect, it } from 'vitest';
import { encodeRlp, hexlify, randomBytes } from 'ethers';
import { decodeRawTransaction, rawTransactionSize } from '../../src/rpc/params/raw-transaction.js';

/** The size a node counts, read from the hex length and at most two RLP headers (no decode). */
describe('raw transaction size', () => {
  it('args: a legacy or typed transaction counts all its bytes', () => {
    const legacy = encodeRlp(['0x01', '0x02', hexlify(randomBytes(300))]);
    expect(rawTransactionSize(legacy)).toBe((legacy.length - 2) / 2);
    const typed = `0x02${encodeRlp(['0x01', hexlify(randomBytes(70_000))]).slice(2)}`;
    expect(rawTransactionSize(typed)).toBe((typed.length - 2) / 2);
  });

  it("args: a blob transaction in its network form counts the transaction, not the sidecar's blobs", () => {
    const body = encodeRlp(['0x01', '0x', hexlify(randomBytes(200))]);
    const wrapped = `0x03${encodeRlp([['0x01', '0x', hexlify(randomBytes(200))], [hexlify(randomBytes(131_072))], [hexlify(randomBytes(48))], [hexlify(randomBytes(48))]]).slice(2)}`;
    expect(rawTransactionSize(wrapped)).toBe(1 + (body.length - 2) / 2);
    const plain = `0x03${body.slice(2)}`;
    expect(rawTransactionSize(plain)).toBe((plain.length - 2) / 2);
  });

  it('error: past the cap the refusal names RPC_MAX_RAW_TX_BYTES and nothing is decoded (garbage of that size is refused for its size)', () => {
    const garbage = `0x02${'ff'.repeat(2_000)}`;
    expect(() => decodeRawTransaction(garbage, 1_024)).toThrow(
      'oversized data: transaction size 2001, limit 1024 (RPC_MAX_RAW_TX_BYTES)',
    );
    expect(() => decodeRawTransaction(garbage, 4_096)).toThrow(
      /^invalid params: param 0 \(signedTransaction\): not a signed transaction/,
    );
  });
});
