import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openTestDb } from '../helpers/db.js';
import { call, chain, startTestRpc } from './helpers.js';
import type { Anvil } from '../../src/devnet/anvil.js';

/**
 * The bundler forwarding at the wire: what the endpoint does with a bundler of another vendor, one that
 * answers with an ERC-4337 validation error, one behind a proxy answering HTML, and one that is gone.
 * (The real bundler, Alto, is exercised end to end in test/e2e/devnet/aa.test.ts.)
 */

interface Wire {
  url: string;
  seen: string[];
  close(): Promise<void>;
}

/** An HTTP server answering every request with `answer(method, id)`: [status, content-type, body]. */
async function wire(answer: (method: string, id: unknown) => [number, string, string]): Promise<Wire> {
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { id, method } = JSON.parse(Buffer.concat(chunks).toString()) as { id: unknown; method: string };
      seen.push(method);
      const [status, type, body] = answer(method, id);
      res.writeHead(status, { 'content-type': type }).end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((r) => (server.close(() => r()), server.closeAllConnections())),
  };
}

const HASH = `0x${'22'.repeat(32)}`;
/** A complete v0.7 user operation (the spec refuses a partial one before any bundler is asked). */
const OP = {
  sender: '0x1111111111111111111111111111111111111111',
  nonce: '0x0',
  callData: '0x',
  callGasLimit: '0x186a0',
  verificationGasLimit: '0x186a0',
  preVerificationGas: '0xc350',
  maxFeePerGas: '0x3b9aca00',
  maxPriorityFeePerGas: '0x3b9aca00',
  signature: '0x',
};
const EP = '0x2222222222222222222222222222222222222222';
/** A refused signature as a bundler may word it: ERC-7769 code -32507, with data to carry through. */
const AA24 = {
  code: -32507,
  message: 'Invalid UserOperation signature or paymaster signature',
  data: { reason: 'AA24 signature error' },
};

let anvil: Anvil;
let db: Awaited<ReturnType<typeof openTestDb>>;
const servers: { stop(): Promise<void> }[] = [];
const wires: Wire[] = [];

async function endpointFor(bundlerUrl: string, prefix?: string) {
  const rpc = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc'),
    upstreams: [anvil.url],
    env: {
      RPC_BUNDLER_URL: bundlerUrl,
      ...(prefix ? { RPC_BUNDLER_VENDOR_PREFIX: prefix } : {}),
      RPC_UPSTREAM_TIMEOUT_MS: '1000',
    },
  });
  servers.push(rpc);
  return rpc.url;
}

beforeAll(async () => {
  ({ anvil } = await chain());
  db = await openTestDb();
});

afterAll(async () => {
  for (const s of servers) await s.stop();
  for (const w of wires) await w.close();
  await anvil?.stop();
  await db?.close();
});

describe('bundler forwarding', () => {
  it('behavior: vendor_ methods take the configured prefix of any vendor; eth_ methods keep their names', async () => {
    const bundler = await wire((method, id) => [
      200,
      'application/json',
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        result: method === 'acme_getUserOperationStatus' ? { status: 'included', transactionHash: HASH } : [EP],
      }),
    ]);
    wires.push(bundler);
    const url = await endpointFor(bundler.url, 'acme_');
    expect((await call(url, 'vendor_getUserOperationStatus', [HASH])).result).toEqual({
      status: 'included',
      transactionHash: HASH,
    });
    expect((await call(url, 'eth_supportedEntryPoints', [])).result).toEqual([EP]);
    expect(bundler.seen).toEqual(['acme_getUserOperationStatus', 'eth_supportedEntryPoints']);
  });

  it("error: the bundler's own error (an AA code) passes through with its code, message and data", async () => {
    const bundler = await wire((_m, id) => [
      200,
      'application/json',
      JSON.stringify({ jsonrpc: '2.0', id, error: AA24 }),
    ]);
    wires.push(bundler);
    const url = await endpointFor(bundler.url, 'pimlico_');
    expect((await call(url, 'eth_sendUserOperation', [OP, EP])).error).toEqual(AA24);
  });

  it("error: an error the bundler sends without a code (Alto's own exceptions) is -32603 with its message, never an error object without a code", async () => {
    const bundler = await wire((_m, id) => [
      200,
      'application/json',
      JSON.stringify({ jsonrpc: '2.0', id, error: { message: 'Hex size (28) exceeds padding size (16).' } }),
    ]);
    wires.push(bundler);
    const url = await endpointFor(bundler.url);
    expect((await call(url, 'eth_sendUserOperation', [OP, EP])).error).toEqual({
      code: -32603,
      message: 'the ERC-4337 bundler failed: Hex size (28) exceeds padding size (16).',
    });
  });

  it('error: a v0.6 operation sent to the canonical EntryPoint v0.7 is -32602 naming both, and the bundler is not asked', async () => {
    const bundler = await wire((_m, id) => [
      200,
      'application/json',
      JSON.stringify({ jsonrpc: '2.0', id, result: HASH }),
    ]);
    wires.push(bundler);
    const url = await endpointFor(bundler.url);
    const { callData, signature, sender, nonce, ...gas } = OP;
    const v06 = { sender, nonce, initCode: '0x', callData, ...gas, paymasterAndData: '0x', signature };
    const reply = await call(url, 'eth_sendUserOperation', [v06, '0x0000000071727De22E5E9d8BAf0edAc6f37da032']);
    expect(reply.error?.code).toBe(-32602);
    expect(reply.error?.message).toMatch(
      /param 1 \(entryPoint\): 0x0000000071727De22E5E9d8BAf0edAc6f37da032 is the EntryPoint v0\.7 and the user operation has the v0\.6 shape/,
    );
    // The same operation at the v0.6 EntryPoint goes through.
    expect((await call(url, 'eth_sendUserOperation', [v06, '0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789'])).result).toBe(
      HASH,
    );
    expect(bundler.seen).toEqual(['eth_sendUserOperation']);
  });

  it("error: a bundler answering HTML (a proxy's 502 page) is -32002 naming the bundler, as JSON", async () => {
    const bundler = await wire(() => [502, 'text/html', '<html><body>502 Bad Gateway</body></html>']);
    wires.push(bundler);
    const url = await endpointFor(bundler.url);
    const reply = await call(url, 'eth_getUserOperationReceipt', [HASH]);
    expect(reply.error).toEqual({ code: -32002, message: 'the ERC-4337 bundler is not available: answered HTTP 502' });
  });

  it('error: a bundler that is gone is -32002 naming the bundler, and the rest of the endpoint answers', async () => {
    const bundler = await wire(() => [200, 'application/json', '{}']);
    await bundler.close();
    const url = await endpointFor(bundler.url);
    const reply = await call(url, 'vendor_getUserOperationGasPrice', []);
    expect(reply.error).toEqual({
      code: -32002,
      message: 'the ERC-4337 bundler is not available: connection failed: ECONNREFUSED',
    });
    expect((await call(url, 'eth_chainId', [])).result).toBe('0x539');
  });

  it('error: a bundler that never answers is -32002 after the upstream timeout (RPC_UPSTREAM_TIMEOUT_MS)', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    wires.push({
      url: '',
      seen: [],
      close: () => new Promise((r) => (silent.close(() => r()), silent.closeAllConnections())),
    });
    const url = await endpointFor(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`);
    const reply = await call(url, 'eth_supportedEntryPoints', []);
    expect(reply.error).toEqual({
      code: -32002,
      message: 'the ERC-4337 bundler is not available: did not answer within 1000 ms',
    });
  });
});
