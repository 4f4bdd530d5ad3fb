import { createPublicKey } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SigningKey, getBytes, hexlify, toBeArray } from 'ethers';

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** DER INTEGER of a positive number: minimal big-endian bytes, with a 00 in front if the top bit is set. */
function derInteger(value: bigint): Buffer {
  let bytes = Buffer.from(toBeArray(value));
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return Buffer.concat([Buffer.from([0x02, bytes.length]), bytes]);
}

function derSignature(r: bigint, s: bigint): Buffer {
  const body = Buffer.concat([derInteger(r), derInteger(s)]);
  return Buffer.concat([Buffer.from([0x30, body.length]), body]);
}

/** SubjectPublicKeyInfo DER of a secp256k1 key, built by node:crypto from the JWK coordinates. */
function spki(key: SigningKey): Buffer {
  const point = Buffer.from(getBytes(key.publicKey));
  const jwk = {
    kty: 'EC',
    crv: 'secp256k1',
    x: point.subarray(1, 33).toString('base64url'),
    y: point.subarray(33).toString('base64url'),
  };
  return createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'der' });
}

export interface FakeKms {
  url: string;
  /** How many Sign answers carried the high-s (n − s) form of the signature. */
  highS: number;
  signs: number;
  close(): Promise<void>;
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
 * A server speaking the AWS KMS JSON 1.1 protocol for GetPublicKey and Sign, holding local secp256k1
 * keys. Every other Sign answer is deliberately given in its high-s form (still a valid ECDSA signature,
 * as real KMS returns about half the time), to prove the client normalises it.
 */
export async function startFakeKms(keys: Map<string, SigningKey>): Promise<FakeKms> {
  const state = { highS: 0, signs: 0 };
  const reply = (res: ServerResponse, status: number, body: object, errorType?: string) => {
    const headers: Record<string, string> = { 'content-type': 'application/x-amz-json-1.1' };
    if (errorType) headers['x-amzn-errortype'] = errorType;
    res.writeHead(status, headers).end(JSON.stringify(errorType ? { __type: errorType, ...body } : body));
  };
  const server = createServer((req, res) => {
    void (async () => {
      const body = JSON.parse(await readBody(req)) as Record<string, string>;
      const target = req.headers['x-amz-target'];
      if (req.method !== 'POST' || req.url !== '/' || req.headers['content-type'] !== 'application/x-amz-json-1.1') {
        return reply(res, 400, { message: 'not a KMS JSON request' }, 'ValidationException');
      }
      const key = keys.get(body.KeyId ?? '');
      if (!key) return reply(res, 400, { message: `Key '${body.KeyId}' does not exist` }, 'NotFoundException');
      if (target === 'TrentService.GetPublicKey') {
        return reply(res, 200, {
          KeyId: body.KeyId,
          PublicKey: spki(key).toString('base64'),
          KeySpec: 'ECC_SECG_P256K1',
          KeyUsage: 'SIGN_VERIFY',
          SigningAlgorithms: ['ECDSA_SHA_256'],
        });
      }
      if (target === 'TrentService.Sign') {
        const message = Buffer.from(body.Message ?? '', 'base64');
        if (body.MessageType !== 'DIGEST' || body.SigningAlgorithm !== 'ECDSA_SHA_256' || message.length !== 32) {
          return reply(res, 400, { message: 'expected a 32-byte DIGEST with ECDSA_SHA_256' }, 'ValidationException');
        }
        const sig = key.sign(hexlify(message));
        let s = BigInt(sig.s);
        if (state.signs++ % 2 === 0) {
          s = N - s;
          state.highS++;
        }
        return reply(res, 200, {
          KeyId: body.KeyId,
          Signature: derSignature(BigInt(sig.r), s).toString('base64'),
          SigningAlgorithm: 'ECDSA_SHA_256',
        });
      }
      return reply(res, 400, { message: `unsupported target ${String(target)}` }, 'UnsupportedOperationException');
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get highS() {
      return state.highS;
    },
    get signs() {
      return state.signs;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
