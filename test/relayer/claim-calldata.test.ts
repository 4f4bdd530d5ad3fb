import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { Signature, ZeroAddress, getBytes, hexlify, keccak256, toUtf8Bytes } from 'ethers';
import { L1MessageServiceInterface, L2MessageServiceInterface } from '../../generated/contracts/abi/index.js';
import {
  encodeClaimMessageCall,
  encodeClaimMessageWithProofCall,
  type ProvenMessage,
} from '../../src/relayer/claim/calldata.js';
import { encodeClaim } from '../../src/relayer/claim/facts.js';
import { compressedClaimSize, placeholderSignedClaim } from '../../src/relayer/pipeline/l1-to-l2.js';
import { toTransaction } from '../../src/relayer/signer.js';
import type { MessageRow } from '../../src/relayer/db/repository.js';
import type { DirectionContext } from '../../src/relayer/pipeline/context.js';
import { seededRandom, type Random } from '../common/eth/random.js';

/** Calldata lengths: none, a selector, word boundaries, and a long payload. */
const CALLDATA_LENGTHS = [0, 1, 4, 31, 32, 33, 64, 68, 1_000, 20_000];

const randomMessage = (rnd: Random): ProvenMessage => ({
  // Rows hold lower-case addresses; mixed case must encode the same.
  from: rnd.int(4) === 0 ? ZeroAddress : rnd.hex(20),
  to: rnd.int(3) === 0 ? rnd.hex(20).toUpperCase().replace('0X', '0x') : rnd.hex(20),
  fee: rnd.uint(256).toString(),
  value: rnd.uint(256).toString(),
  feeRecipient: rnd.int(2) === 0 ? ZeroAddress : rnd.hex(20),
  calldata: rnd.hex(rnd.int(2) === 0 ? CALLDATA_LENGTHS[rnd.int(CALLDATA_LENGTHS.length)]! : rnd.int(300)),
  nonce: rnd.uint(256).toString(),
  proof: Array.from({ length: rnd.int(33) }, () => rnd.hex(32)),
  leafIndex: Number(rnd.uint(32)),
  merkleRoot: rnd.hex(32),
});

const row = (m: ProvenMessage): MessageRow =>
  ({
    message_hash: '0x01',
    message_sender: m.from,
    destination: m.to,
    fee: String(m.fee),
    value: String(m.value),
    message_nonce: String(m.nonce),
    calldata: m.calldata,
    proof: [...m.proof],
    leaf_index: Number(m.leafIndex),
    merkle_root: m.merkleRoot,
  }) as MessageRow;

const context = (direction: DirectionContext['direction'], via?: string) =>
  ({
    direction,
    destination: {
      chainId: 59_141n,
      contract: '0x' + '5a'.repeat(20),
      iface: direction === 'L1_TO_L2' ? L2MessageServiceInterface : L1MessageServiceInterface,
    },
    destinationConfig: { claimViaAddress: via },
    sender: { signer: { address: '0x' + '7b'.repeat(20) } },
  }) as unknown as DirectionContext;

describe('claim calldata', () => {
  it("behavior: claimMessage calldata equals ethers' encodeFunctionData for random messages", () => {
    const rnd = seededRandom();
    for (let i = 0; i < 300; i++) {
      const m = randomMessage(rnd);
      const expected = L2MessageServiceInterface.encodeFunctionData('claimMessage', [
        m.from,
        m.to,
        m.fee,
        m.value,
        m.feeRecipient,
        m.calldata,
        m.nonce,
      ]);
      expect(encodeClaimMessageCall(m), `seed ${rnd.seed}, case ${i}`).toBe(expected);
    }
  });

  it("behavior: claimMessageWithProof calldata equals ethers' for random messages and proofs of 0 to 32 entries", () => {
    const rnd = seededRandom();
    for (let i = 0; i < 300; i++) {
      const m = randomMessage(rnd);
      const expected = L1MessageServiceInterface.encodeFunctionData('claimMessageWithProof', [
        [m.proof, m.nonce, m.leafIndex, m.from, m.to, m.fee, m.value, m.feeRecipient, m.merkleRoot, m.calldata],
      ]);
      expect(encodeClaimMessageWithProofCall(m), `seed ${rnd.seed}, case ${i}`).toBe(expected);
    }
  });

  it('behavior: encodeClaim of a row names the relayer as fee recipient only when claiming through a contract', () => {
    const rnd = seededRandom();
    for (let i = 0; i < 50; i++) {
      const m = randomMessage(rnd);
      const via = rnd.int(2) === 0 ? '0x' + 'c1'.repeat(20) : undefined;
      const recipient = via === undefined ? ZeroAddress : '0x' + '7b'.repeat(20);
      const at = `seed ${rnd.seed}, case ${i}`;
      expect(encodeClaim(context('L1_TO_L2', via), row(m)), at).toBe(
        L2MessageServiceInterface.encodeFunctionData('claimMessage', [
          m.from,
          m.to,
          m.fee,
          m.value,
          recipient,
          m.calldata,
          m.nonce,
        ]),
      );
      expect(encodeClaim(context('L2_TO_L1', via), row(m)), at).toBe(
        L1MessageServiceInterface.encodeFunctionData('claimMessageWithProof', [
          [m.proof, m.nonce, m.leafIndex, m.from, m.to, m.fee, m.value, recipient, m.merkleRoot, m.calldata],
        ]),
      );
    }
  });

  it('behavior: the compressed claim size is the one the ethers-built transaction gave, from the same bytes', () => {
    // The size computation before issue 12, kept here as the oracle: the same placeholder signature.
    const placeholder = Signature.from({
      r: keccak256(toUtf8Bytes('claim size r')),
      s: `0x${keccak256(toUtf8Bytes('claim size s')).slice(3).padStart(64, '0')}`,
      v: 27,
    });
    const before = (ctx: DirectionContext, m: MessageRow) => {
      const tx = toTransaction({
        chainId: ctx.destination.chainId,
        nonce: 0,
        to: ctx.destinationConfig.claimViaAddress ?? ctx.destination.contract,
        data: encodeClaim(ctx, m),
        value: 0n,
        gasLimit: 200_000n,
        maxFeePerGas: 1_000_000_000n,
        maxPriorityFeePerGas: 1_000_000_000n,
      });
      tx.signature = placeholder;
      return tx.serialized;
    };
    const rnd = seededRandom();
    for (let i = 0; i < 100; i++) {
      const ctx = context('L1_TO_L2', rnd.int(2) === 0 ? '0x' + 'c1'.repeat(20) : undefined);
      const m = row(randomMessage(rnd));
      const at = `seed ${rnd.seed}, case ${i}`;
      const bytes = before(ctx, m);
      // Random bytes compress to about their size whatever they are, so the bytes are compared too.
      expect(hexlify(placeholderSignedClaim(ctx, m)), at).toBe(bytes);
      expect(compressedClaimSize(ctx, m), at).toBe(deflateRawSync(getBytes(bytes), { level: 9 }).length);
    }
  });

  it('error: a malformed field is refused with its name', () => {
    const m = randomMessage(seededRandom(7));
    expect(() => encodeClaimMessageCall({ ...m, from: '0x1234' })).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: from is not a 20-byte hex address: "0x1234"]`,
    );
    expect(() => encodeClaimMessageCall({ ...m, fee: '-1' })).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: fee is out of range: -1]`,
    );
    expect(() => encodeClaimMessageCall({ ...m, fee: '' })).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: fee is not an integer: ""]`,
    );
    expect(() => encodeClaimMessageCall({ ...m, value: (1n << 256n).toString() })).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: value is out of range: 115792089237316195423570985008687907853269984665640564039457584007913129639936]`,
    );
    expect(() => encodeClaimMessageCall({ ...m, nonce: '1.5' })).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: nonce is not an integer: "1.5"]`,
    );
    expect(() => encodeClaimMessageCall({ ...m, calldata: '0x123' })).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: calldata is not 0x-prefixed even-length hex]`,
    );
    expect(() => encodeClaimMessageCall({ ...m, calldata: 'abcd' })).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: calldata is not 0x-prefixed even-length hex]`,
    );
    expect(() => encodeClaimMessageWithProofCall({ ...m, leafIndex: 2 ** 32 })).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: leafIndex is out of range: 4294967296]`,
    );
    expect(() => encodeClaimMessageWithProofCall({ ...m, proof: ['0x12'] })).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: proof[0] is not 32 bytes of hex: "0x12"]`,
    );
    expect(() =>
      encodeClaimMessageWithProofCall({ ...m, proof: Array.from({ length: 33 }, () => m.merkleRoot) }),
    ).toThrowErrorMatchingInlineSnapshot(`[RangeError: proof has 33 entries, more than 32]`);
    expect(() => encodeClaimMessageWithProofCall({ ...m, merkleRoot: '0x' })).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: merkleRoot is not 32 bytes of hex: "0x"]`,
    );
    expect(() => encodeClaim(context('L2_TO_L1'), { ...row(m), proof: null })).toThrowErrorMatchingInlineSnapshot(
      `[Error: message 0x01 has no Merkle proof yet; it cannot be claimed on L1]`,
    );
  });
});
