import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { l1Interface, l2Interface } from '../../src/relayer/chain.js';
import { decodeMessageSent, type RawLog } from '../../src/relayer/message-sent.js';

/**
 * The listener's MessageSent decoder (src/relayer/message-sent.ts) reads the node's hex itself instead of ethers'
 * parseLog: what it gives must be what ethers decodes from the same log, for any values, and a log that is not
 * that event's encoding must be refused, not misread.
 */
const topic = l1Interface.getEvent('MessageSent')!.topicHash;
const hex = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => `0x${Buffer.from(b).toString('hex')}`);
const uint256 = fc.bigInt({ min: 0n, max: 2n ** 256n - 1n });

const sentLog = fc.record({
  from: hex(20), to: hex(20), fee: uint256, value: uint256, nonce: uint256,
  calldata: fc.uint8Array({ maxLength: 200 }).map((b) => `0x${Buffer.from(b).toString('hex')}`),
  hash: hex(32), block: fc.nat(2 ** 40), index: fc.nat(10_000), l2: fc.boolean(),
});

type Sent = typeof sentLog extends fc.Arbitrary<infer T> ? T : never;

function encode(m: Sent): RawLog {
  const iface = m.l2 ? l2Interface : l1Interface;
  const { data, topics } = iface.encodeEventLog('MessageSent', [m.from, m.to, m.fee, m.value, m.nonce, m.calldata, m.hash]);
  return { address: `0x${'5'.repeat(40)}`, topics, data, blockNumber: `0x${m.block.toString(16)}`, transactionHash: `0x${'AB'.repeat(32)}`, logIndex: `0x${m.index.toString(16)}` };
}

describe('MessageSent decoder', () => {
  it('behavior: decodes every log as ethers parseLog does (lower-case hex, decimal strings)', () => {
    fc.assert(
      fc.property(sentLog, (m) => {
        const log = encode(m);
        const a = l1Interface.parseLog(log)!.args;
        expect(decodeMessageSent(log, topic)).toEqual({
          from: String(a._from).toLowerCase(), to: String(a._to).toLowerCase(), fee: String(a._fee), value: String(a._value), nonce: String(a._nonce),
          calldata: String(a._calldata).toLowerCase(), messageHash: String(a._messageHash).toLowerCase(),
          blockNumber: m.block, txHash: `0x${'ab'.repeat(32)}`, logIndex: m.index,
        });
      }),
      { numRuns: 300 },
    );
  });

  it('error: a log that is not exactly a MessageSent encoding is refused', () => {
    const log = encode({ from: `0x${'1'.repeat(40)}`, to: `0x${'2'.repeat(40)}`, fee: 1n, value: 2n, nonce: 3n, calldata: '0xdeadbeef', hash: `0x${'9'.repeat(64)}`, block: 1, index: 0, l2: false });
    const other = l1Interface.getEvent('L2MerkleRootAdded')!.topicHash;
    const cases: [string, RawLog][] = [
      ['another event', { ...log, topics: [other, ...log.topics.slice(1)] }],
      ['a topic missing', { ...log, topics: log.topics.slice(0, 3) }],
      ['an address with high bits', { ...log, topics: [log.topics[0]!, `0x01${log.topics[1]!.slice(4)}`, ...log.topics.slice(2)] }],
      ['data cut short', { ...log, data: log.data.slice(0, -64) }],
      ['a word too many', { ...log, data: `${log.data}${'0'.repeat(64)}` }],
      ['a calldata length past the data', { ...log, data: `${log.data.slice(0, 2 + 4 * 64)}${'f'.repeat(64)}${log.data.slice(2 + 5 * 64)}` }],
      ['non-zero padding', { ...log, data: `${log.data.slice(0, -2)}01` }],
      ['not hex', { ...log, data: `${log.data.slice(0, -2)}zz` }],
    ];
    for (const [what, bad] of cases) expect(() => decodeMessageSent(bad, topic), what).toThrow(/is not a MessageSent event/);
  });
});
