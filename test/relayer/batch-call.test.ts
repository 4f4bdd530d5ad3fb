import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProvider } from '../../src/common/chain/provider.js';
import { MAX_CALLS_PER_BATCH, batchViewCalls } from '../../src/relayer/batch-call.js';

type Call = { id: number; method: string; params: [{ to: string; data: string }, string] };

/**
 * batchViewCalls against a node speaking JSON-RPC on a real socket: answers come back out of order (matched
 * by id), an error answer rejects only its call, batches are split at MAX_CALLS_PER_BATCH, and a node that
 * refuses batches gets the calls one by one.
 */
describe('batchViewCalls', () => {
  let server: Server;
  let url: string;
  const requests: { batch: boolean; size: number }[] = [];
  let refuseBatches = false;
  const answer = (c: Call) =>
    c.params[0].data === '0xdead'
      ? { jsonrpc: '2.0', id: c.id, error: { code: -32000, message: 'boom' } }
      : { jsonrpc: '2.0', id: c.id, result: `0x${c.params[0].data.slice(2).padStart(64, '0')}` };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Call | Call[];
        requests.push({ batch: Array.isArray(body), size: Array.isArray(body) ? body.length : 1 });
        let out: unknown;
        if (!Array.isArray(body)) out = answer(body);
        else if (refuseBatches)
          out = { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch requests are not supported' } };
        else out = body.map(answer).reverse();
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const to = `0x${'ab'.repeat(20)}`;
  const calls = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      to,
      data: i === 3 ? '0xdead' : `0x${(i + 1).toString(16).padStart(2, '0')}`,
    }));

  it('one request per MAX_CALLS_PER_BATCH calls; results in call order; an error answer rejects only its call', async () => {
    requests.length = 0;
    const provider = createProvider(url, 1);
    const n = MAX_CALLS_PER_BATCH + 5;
    const got = await batchViewCalls(provider, calls(n));
    // The two requests go out at once; either may arrive first.
    expect(requests).toEqual(
      expect.arrayContaining([
        { batch: true, size: MAX_CALLS_PER_BATCH },
        { batch: true, size: 5 },
      ]),
    );
    expect(requests).toHaveLength(2);
    expect(got).toHaveLength(n);
    for (const [i, r] of got.entries()) {
      if (i === 3) {
        expect(r.status).toBe('rejected');
        continue;
      }
      expect(r).toEqual({ status: 'fulfilled', value: `0x${(i + 1).toString(16).padStart(64, '0')}` });
    }
    provider.destroy();
  });

  it('a node that refuses batches gets the calls one by one, with the same results', async () => {
    requests.length = 0;
    refuseBatches = true;
    const provider = createProvider(url, 1);
    const got = await batchViewCalls(provider, calls(6));
    refuseBatches = false;
    expect(requests[0]).toEqual({ batch: true, size: 6 });
    expect(requests.slice(1)).toEqual(Array.from({ length: 6 }, () => ({ batch: false, size: 1 })));
    expect(got.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect(got[5]).toEqual({ status: 'fulfilled', value: `0x${'06'.padStart(64, '0')}` });
    provider.destroy();
  });
});
