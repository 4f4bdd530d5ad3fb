import { id } from 'ethers';
import type { MessageFields } from '../common/chain/messages.js';

/**
 * `MessageSent(address indexed _from, address indexed _to, uint256 _fee, uint256 _value, uint256 _nonce,
 * bytes _calldata, bytes32 indexed _messageHash)` decoded from a log's topics and data by its fixed ABI layout.
 *
 * Why not ethers' `Interface.parseLog`: it took ~0.7 ms per log in the relayer's profile (its generic coder, and
 * a keccak per address for the checksum we then lower-case), ~0.4 s of the first round over a backlog of 600
 * messages and ~10 % of the relayer's CPU per claim. This reads the same fields in a few microseconds and refuses
 * what ethers refuses (where ethers defers the error to the first read of a field, this throws at once), naming
 * the problem. test/relayer/message-sent.test.ts compares it with ethers on real logs and on random ones.
 */
export const MESSAGE_SENT_TOPIC = id('MessageSent(address,address,uint256,uint256,uint256,bytes,bytes32)');

/** The message's fields (addresses and calldata lower-case) and its hash, lower-case. */
export interface MessageSentFields extends MessageFields {
  messageHash: string;
}

const WORD = 64; // hex digits in a 32-byte word
const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;

/** A topic that must be one 32-byte word, lower-case. */
function topicWord(topic: string | undefined, name: string): string {
  if (topic === undefined || topic.length !== 2 + WORD || !HEX.test(topic))
    throw new Error(`MessageSent log: topic ${name} is not a 32-byte word`);
  return topic.toLowerCase();
}

/** An indexed address topic: 12 zero bytes, then the address. */
function addressTopic(topic: string | undefined, name: string): string {
  const word = topicWord(topic, name);
  if (!word.startsWith('0x000000000000000000000000'))
    throw new Error(`MessageSent log: topic ${name} is not an address (its first 12 bytes are not zero)`);
  return `0x${word.slice(2 + 24)}`;
}

/**
 * The 32-byte word at byte `at` of the data's hex (without 0x) as a number that must be a safe integer (an offset or a
 * length).
 */
function smallWord(hex: string, at: number, name: string): number {
  const value = BigInt(`0x${hex.slice(at * 2, at * 2 + WORD)}`);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`MessageSent log: ${name} ${value} is out of range`);
  return Number(value);
}

export function decodeMessageSent(log: { topics: readonly string[]; data: string }): MessageSentFields {
  const { topics, data } = log;
  if (topics.length !== 4) throw new Error(`MessageSent log: expected 4 topics, got ${topics.length}`);
  if (topics[0]!.toLowerCase() !== MESSAGE_SENT_TOPIC)
    throw new Error(`MessageSent log: topic 0 ${topics[0]} is not MessageSent's`);
  const messageHash = topicWord(topics[3], '_messageHash');
  if (!HEX.test(data)) throw new Error('MessageSent log: data is not 0x-prefixed hex of whole bytes');
  const hex = data.slice(2);
  const size = hex.length / 2;
  if (size < 160)
    throw new Error(
      `MessageSent log: data of ${size} bytes; at least 160 expected (four words and the calldata's length)`,
    );
  const offset = smallWord(hex, 96, '_calldata offset');
  if (offset + 32 > size)
    throw new Error(`MessageSent log: _calldata offset ${offset} is outside the data (${size} bytes)`);
  const length = smallWord(hex, offset, '_calldata length');
  const start = (offset + 32) * 2;
  if (offset + 32 + length > size)
    throw new Error(`MessageSent log: _calldata of ${length} bytes runs past the end of the data (${size} bytes)`);
  const word = (i: number) => BigInt(`0x${hex.slice(i * WORD, (i + 1) * WORD)}`);
  return {
    from: addressTopic(topics[1], '_from'),
    to: addressTopic(topics[2], '_to'),
    fee: word(0),
    value: word(1),
    nonce: word(2),
    calldata: `0x${hex.slice(start, start + length * 2).toLowerCase()}`,
    messageHash,
  };
}
