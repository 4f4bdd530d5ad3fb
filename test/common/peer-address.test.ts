import { isIP, SocketAddress } from 'node:net';
import { describe, expect, it } from 'vitest';
import { formatPeerAddress } from '../../src/common/http/peer-address.js';

/** An address's 4 or 16 bytes, from the text Node gives it. */
function bytesOf(address: string): Uint8Array {
  if (isIP(address) === 4) return Uint8Array.from(address.split('.').map(Number));
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (mapped) return Uint8Array.from([...Array<number>(10).fill(0), 0xff, 0xff, ...bytesOf(mapped[1]!)]);
  const [head, tail] = address.split('::') as [string, string | undefined];
  const groups = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = groups(head);
  const right = groups(tail);
  const all = tail === undefined ? left : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return Uint8Array.from(all.flatMap((g) => [g >> 8, g & 0xff]));
}

describe('formatPeerAddress', () => {
  it("behavior: writes every address as Node's socket.remoteAddress does (so both transports key a client alike)", () => {
    const cases = [
      '127.0.0.1',
      '10.0.0.255',
      '::1',
      '::',
      '::ffff:127.0.0.1',
      '2001:db8::1',
      '2001:db8:0:0:1:0:0:1',
      'fe80::1:2:3:4',
      '1:0:0:2:0:0:0:3',
      '1:2:3:4:5:6:7:8',
      '1:0:2:0:3:0:4:0',
    ];
    for (const text of cases) {
      // SocketAddress normalises the way Node names peers (inet_ntop).
      const node = new SocketAddress({ address: text, family: isIP(text) === 4 ? 'ipv4' : 'ipv6' }).address;
      expect(formatPeerAddress(bytesOf(node)), text).toBe(node);
    }
    expect(formatPeerAddress(new Uint8Array(3))).toBe('unknown');
  });
});
