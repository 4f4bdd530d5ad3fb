import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type ServerOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import { SigningKey, concat, keccak256, toBeHex } from 'ethers';

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** What the fake signer saw, so tests can assert on the wire format. */
export interface SignRequestLog {
  path: string;
  data: string;
  authorization: string | undefined;
}

export interface FakeWeb3Signer {
  url: string;
  requests: SignRequestLog[];
  close(): Promise<void>;
}

/** Web3Signer's eth1 identifier: 0x + the 64-byte uncompressed point without its 04 prefix. */
export function web3SignerIdentifier(key: SigningKey): string {
  return `0x${key.publicKey.slice(4)}`;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * A Web3Signer-compatible eth1 signer, written from its published OpenAPI description: POST
 * /api/v1/eth1/sign/{identifier} with {"data": hex}; it signs keccak256(data) and answers text/plain
 * r ‖ s ‖ v (v = 27/28). `keys` maps an identifier to the key that signs under it, so a test can make it
 * answer with the wrong key. `prefix` mounts the API under a path, as a reverse proxy would.
 */
export async function startFakeWeb3Signer(options: {
  keys: Map<string, SigningKey>;
  tls?: ServerOptions;
  prefix?: string;
  /** Answer with the mirrored (high-s, other parity) form of each signature, as a non-Web3Signer signer might. */
  highS?: boolean;
}): Promise<FakeWeb3Signer> {
  const requests: SignRequestLog[] = [];
  const prefix = options.prefix ?? '';
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const body = await readBody(req);
      const match = new RegExp(`^${prefix}/api/v1/eth1/sign/(0x[0-9a-fA-F]+)$`).exec(req.url ?? '');
      if (req.method !== 'POST' || !match) return res.writeHead(404).end();
      const key = options.keys.get(match[1]!.toLowerCase());
      if (!key) return res.writeHead(404).end();
      let data: string;
      try {
        data = (JSON.parse(body) as { data: string }).data;
        if (!/^0x([0-9a-fA-F]{2})*$/.test(data)) throw new Error('not hex');
      } catch {
        return res.writeHead(400).end();
      }
      requests.push({ path: req.url ?? '', data, authorization: req.headers.authorization });
      const sig = key.sign(keccak256(data));
      const answer = options.highS
        ? concat([sig.r, toBeHex(N - BigInt(sig.s), 32), toBeHex(sig.v === 27 ? 28 : 27, 1)])
        : sig.serialized;
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(answer);
    })();
  };
  const server: Server = options.tls ? createHttpsServer(options.tls, handler) : createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}${prefix}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
