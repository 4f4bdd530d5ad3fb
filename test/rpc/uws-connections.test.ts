import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { canRecount, connectionsByClient } from '../../src/rpc/transport/uws/connections.js';

/**
 * The recount behind HTTP_MAX_CONNECTIONS_PER_CLIENT on uWebSockets.js (src/rpc/transport/uws/connections.ts): uWS
 * reports a closed connection without its peer, so a client's count is read again from the kernel's table. Read
 * here against a plain listener: the connections each address holds on that port, named as Node names a peer.
 */
const sockets: Socket[] = [];
const accepted: Socket[] = [];
const server = createServer((s) => accepted.push(s));
afterAll(() => {
  [...sockets, ...accepted].forEach((s) => s.destroy());
  server.close();
});

async function open(port: number, localAddress: string): Promise<Socket> {
  const s = connect({ port, host: '127.0.0.1', localAddress });
  await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
  sockets.push(s);
  return s;
}

describe.runIf(canRecount())('connections by client (/proc/self/net/tcp)', () => {
  it('behavior: counts the accepted connections of each address on the port, and a closed one no more', async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    await Promise.all([
      open(port, '127.0.0.3'),
      open(port, '127.0.0.3'),
      open(port, '127.0.0.3'),
      open(port, '127.0.0.4'),
    ]);
    // Only this test's two addresses are asserted: the port is any free one, and CI's uWS pass once saw a stranger
    // from 127.0.0.1 accepted here (and counted, rightly) between the connects and the count.
    const ours = () => accepted.filter((s) => s.remoteAddress === '127.0.0.3' || s.remoteAddress === '127.0.0.4');
    await expect.poll(() => ours().length, { timeout: 5_000 }).toBe(4);
    const counts = connectionsByClient(port);
    expect([counts.get('127.0.0.3'), counts.get('127.0.0.4')]).toEqual([3, 1]);
    // Closed by the server (as uWS closes one): its descriptor is gone, so it is not counted, whatever its TCP state.
    ours()
      .find((s) => s.remoteAddress === '127.0.0.4')!
      .destroy();
    await expect.poll(() => connectionsByClient(port).get('127.0.0.4') ?? 0, { timeout: 5_000 }).toBe(0);
    expect(connectionsByClient(port).get('127.0.0.3')).toBe(3);
  });
});
