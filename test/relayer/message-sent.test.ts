import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Wallet, getAddress, hexlify, randomBytes, toBeHex, zeroPadValue, type JsonRpcProvider } from 'ethers';
import { createProvider } from '../../src/common/chain/provider.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { l1Interface, l2Interface } from '../../src/relayer/chain.js';
import { MESSAGE_SENT_TOPIC, decodeMessageSent, type MessageSentFields } from '../../src/relayer/message-sent.js';
import { L2MessageService__factory } from '../../generated/contracts/types/index.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * src/relayer/message-sent.ts against ethers' ABI coder (Interface.parseLog), which the listener used before:
 * on logs of the real contract on anvil, on random logs encoded by ethers, and on malformed logs.
 */
const event = l2Interface.getEvent('MessageSent')!;

/** What ethers decodes from a log, in the decoder's shape. */
function byEthers(log: { topics: readonly string[]; data: string }): MessageSentFields {
  const a = l2Interface.parseLog({ topics: [...log.topics], data: log.data })!.args;
  return {
    from: String(a._from).toLowerCase(),
    to: String(a._to).toLowerCase(),
    fee: a._fee as bigint,
    value: a._value as bigint,
    nonce: a._nonce as bigint,
    calldata: String(a._calldata).toLowerCase(),
    messageHash: String(a._messageHash).toLowerCase(),
  };
}

/**
 * Whether ethers throws on the log (or on the first read of a field: it defers some errors) or reads it as another
 * event.
 */
function ethersRefuses(log: { topics: string[]; data: string }): boolean {
  try {
    if (l2Interface.parseLog(log)?.name !== 'MessageSent') return true;
    byEthers(log);
    return false;
  } catch {
    return true;
  }
}

describe('MessageSent decoding', () => {
  let anvil: Anvil;
  let provider: JsonRpcProvider;
  beforeAll(async () => {
    anvil = await startAnvil({ port: 0, chainId: 31_777 });
    provider = createProvider(anvil.url, anvil.chainId);
  });
  afterAll(async () => {
    await anvil?.stop();
  });

  it("behavior: the topic is the one of both message services' ABIs", () => {
    expect(MESSAGE_SENT_TOPIC).toBe(event.topicHash);
    expect(MESSAGE_SENT_TOPIC).toBe(l1Interface.getEvent('MessageSent')!.topicHash);
  });

  it('behavior: logs of the real contract decode as ethers decodes them, calldata of 0 to 1,000 bytes included', async () => {
    const sender = new Wallet(devAccounts(1)[0]!.privateKey, provider);
    const service = await new L2MessageService__factory(sender).deploy(sender.address, 0n);
    await service.waitForDeployment();
    const to = Wallet.createRandom().address;
    const lengths = [0, 1, 31, 32, 33, 100, 1_000];
    for (const [i, n] of lengths.entries()) {
      const fee = BigInt(i) * 1_000_000_007n;
      await mined(service.sendMessage(to, fee, hexlify(randomBytes(n)), { value: fee + BigInt(i) }));
    }
    const logs = await provider.getLogs({
      address: await service.getAddress(),
      topics: [MESSAGE_SENT_TOPIC],
      fromBlock: 0,
    });
    expect(logs).toHaveLength(lengths.length);
    for (const [i, log] of logs.entries()) {
      const decoded = decodeMessageSent(log);
      expect(decoded).toEqual(byEthers(log));
      expect((decoded.calldata.length - 2) / 2).toBe(lengths[i]);
      expect(decoded.to).toBe(to.toLowerCase());
    }
  });

  it('behavior: 500 random logs encoded by ethers (uint256 extremes, calldata up to 300 bytes) decode as ethers decodes them', () => {
    const max = (1n << 256n) - 1n;
    const pick = () =>
      [0n, 1n, max, BigInt(hexlify(randomBytes(32))), BigInt(hexlify(randomBytes(4)))][Math.floor(Math.random() * 5)]!;
    for (let i = 0; i < 500; i++) {
      const args = [
        getAddress(hexlify(randomBytes(20))),
        getAddress(hexlify(randomBytes(20))),
        pick(),
        pick(),
        pick(),
        hexlify(randomBytes(Math.floor(Math.random() * 300))),
        hexlify(randomBytes(32)),
      ];
      const log = l2Interface.encodeEventLog(event, args);
      expect(decodeMessageSent(log)).toEqual(byEthers(log));
    }
  });

  it('behavior: a malformed log is refused with the reason, where ethers throws or reads another event', () => {
    const good = l2Interface.encodeEventLog(event, [
      Wallet.createRandom().address,
      Wallet.createRandom().address,
      1n,
      2n,
      3n,
      '0x1234',
      hexlify(randomBytes(32)),
    ]);
    const data = good.data.slice(2);
    const word = (i: number) => data.slice(i * 64, (i + 1) * 64);
    const withWord = (i: number, value: bigint) =>
      `0x${data.slice(0, i * 64)}${toBeHex(value, 32).slice(2)}${data.slice((i + 1) * 64)}`;
    const cases: [string, { topics: string[]; data: string }, RegExp][] = [
      ['three topics', { topics: good.topics.slice(0, 3), data: good.data }, /expected 4 topics, got 3/],
      [
        'another event',
        { topics: [l2Interface.getEvent('MessageClaimed')!.topicHash, ...good.topics.slice(1)], data: good.data },
        /is not MessageSent's/,
      ],
      [
        'a short address topic',
        { topics: [good.topics[0]!, zeroPadValue('0x01', 20), ...good.topics.slice(2)], data: good.data },
        /topic _from is not a 32-byte word/,
      ],
      [
        'an address topic over 20 bytes',
        { topics: [good.topics[0]!, `0x01${good.topics[1]!.slice(4)}`, ...good.topics.slice(2)], data: good.data },
        /topic _from is not an address/,
      ],
      [
        'a short hash topic',
        { topics: [...good.topics.slice(0, 3), zeroPadValue('0x01', 31)], data: good.data },
        /_messageHash is not a 32-byte word/,
      ],
      ['data that is not hex', { topics: good.topics, data: `0x${'zz'.repeat(160)}` }, /not 0x-prefixed hex/],
      ['data cut short', { topics: good.topics, data: `0x${data.slice(0, 4 * 64)}` }, /at least 160 expected/],
      [
        'an offset past the end',
        { topics: good.topics, data: withWord(3, 10_000n) },
        /_calldata offset 10000 is outside the data/,
      ],
      [
        'a length past the end',
        { topics: good.topics, data: withWord(4, 33n) },
        /_calldata of 33 bytes runs past the end/,
      ],
      [
        'a length beyond any integer',
        { topics: good.topics, data: withWord(4, 1n << 200n) },
        /_calldata length \d+ is out of range/,
      ],
    ];
    expect(word(3)).toBe(toBeHex(128n, 32).slice(2));

    for (const [what, log, reason] of cases) {
      expect(() => decodeMessageSent(log), what).toThrow(reason);
      expect(ethersRefuses(log), `ethers, ${what}`).toBe(true);
    }
  });
});
