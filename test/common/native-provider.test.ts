import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AbiCoder } from 'ethers';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createProvider } from '../../src/common/chain/provider.js';

/**
 * The providers decode answers with Node's native UTF-8 and JSON (src/common/chain/provider.ts); these check
 * that what ethers did with them is unchanged: results, multi-byte text, JSON-RPC errors, malformed bodies.
 */
describe('NativeJsonRpcProvider', () => {
  let server: Server;
  let url: string;
  const answers: Record<string, (id: unknown) => string> = {
    eth_blockNumber: (id) => JSON.stringify({ jsonrpc: '2.0', id, result: '0x2a' }),
    eth_chainId: (id) => JSON.stringify({ jsonrpc: '2.0', id, result: '0x7a69' }),
    web3_clientVersion: (id) => JSON.stringify({ jsonrpc: '2.0', id, result: 'nœud/1.0 — 節点 🚀' }),
    eth_call: (id) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        error: {
          code: 3,
          message: 'execution reverted',
          data: `0x08c379a0${AbiCoder.defaultAbiCoder().encode(['string'], ['no']).slice(2)}`,
        },
      }),
    eth_gasPrice: () => '{"jsonrpc":"2.0","id":',
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const call = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: unknown; method: string };
        res.writeHead(200, { 'content-type': 'application/json' }).end(answers[call.method]!(call.id));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('returns results and decodes multi-byte UTF-8 text', async () => {
    const provider = createProvider(url, 1);
    expect(await provider.getBlockNumber()).toBe(42);
    expect(await provider.send('web3_clientVersion', [])).toBe('nœud/1.0 — 節点 🚀');
    provider.destroy();
  });

  it('maps a JSON-RPC error as ethers does (a revert with its reason)', async () => {
    const provider = createProvider(url, 1);
    const err = (await provider.call({ to: '0x' + '11'.repeat(20), data: '0x' }).catch((e: unknown) => e)) as {
      code?: string;
      reason?: string;
    };
    expect(err.code).toBe('CALL_EXCEPTION');
    expect(err.reason).toBe('no');
    provider.destroy();
  });

  it('error: without a chain id and with no node answering, a call fails within its timeout, and nothing is printed', async () => {
    const printed: unknown[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...args) => void printed.push(args));
    try {
      const provider = createProvider('http://127.0.0.1:9', undefined, { timeoutMs: 2_000 });
      for (let i = 0; i < 2; i++) await expect(provider.getBlockNumber()).rejects.toThrow(/ECONNREFUSED|connect/);
      // ethers' own start-up would now be retrying every second, printing each time.
      await new Promise((r) => setTimeout(r, 1_200));
      provider.destroy();
      expect(printed).toEqual([]);
      // Once the node answers, the chain id is learned and calls go through.
      const up = createProvider(url, undefined);
      expect(await up.getBlockNumber()).toBe(42);
      expect((await up.getNetwork()).chainId).toBe(31337n);
      up.destroy();
    } finally {
      log.mockRestore();
    }
  });

  it('refuses a body that is not JSON, naming it', async () => {
    const provider = createProvider(url, 1);
    await expect(provider.send('eth_gasPrice', [])).rejects.toThrow(/not valid JSON/);
    provider.destroy();
  });
});
