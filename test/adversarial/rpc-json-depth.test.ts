import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Anvil } from '../../src/devnet/anvil.js';
import { post } from '../rpc/helpers.js';
import { blockNumberCanary, chain, openTestDb, startRpcUnderTest, type RpcUnderTest } from './rpc-harness.js';

/**
 * Issue 18, item 6: params nested 10,000 deep overflowed the stack (-32603 and a stack trace in the log),
 * and with "id":1.0 the raw-id scanner overflowed too (HTTP 500, id null). Bodies are now measured
 * before anything walks them (RPC_MAX_JSON_DEPTH, default 64).
 */
let anvil: Anvil;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: RpcUnderTest;
let narrow: RpcUnderTest;

const arrays = (n: number, inner = '') => `${'['.repeat(n)}${inner}${']'.repeat(n)}`;
const objects = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
const request = (id: string, method: string, params?: string) =>
  `{"jsonrpc":"2.0","id":${id},"method":"${method}"${params === undefined ? '' : `,"params":${params}`}}`;

type Reply = { id: unknown; result?: unknown; error?: { code: number; message: string; data?: unknown } };

async function send(url: string, body: string): Promise<{ status: number; text: string; json: Reply | Reply[] }> {
  const r = await post(url, body);
  return { ...r, json: JSON.parse(r.text) as Reply | Reply[] };
}

beforeAll(async () => {
  ({ anvil } = await chain());
  db = await openTestDb();
  rpc = await startRpcUnderTest({ db, schema: db.schema('rpc'), anvil });
  narrow = await startRpcUnderTest({ db, schema: db.schema('rpc_narrow'), anvil, env: { RPC_MAX_JSON_DEPTH: '8' } });
});

afterAll(async () => {
  await rpc?.stop();
  await narrow?.stop();
  await anvil?.stop();
  await db?.close();
});

describe('JSON depth limit (RPC_MAX_JSON_DEPTH)', () => {
  it('error: deep params, deep ids and deep bodies get -32602/-32600 with HTTP 200, never 500, and leave no stack trace', async () => {
    const canary = blockNumberCanary('rpc json depth', rpc.url);
    const deepParams = [
      request('1', 'eth_getBalance', arrays(10_000)),
      request('1', 'eth_getBalance', `["0x0000000000000000000000000000000000000000",${objects(10_000)}]`),
      request('1', 'eth_newFilter', `[{"address":${arrays(10_000)}}]`),
      request('1', 'eth_getLogs', `[{"topics":[${arrays(10_000, '"x"')}]}]`),
    ];
    for (const body of deepParams) {
      const r = await send(rpc.url, body);
      expect(r.status).toBe(200);
      const reply = r.json as Reply;
      expect(reply.id).toBe(1);
      expect(reply.error).toMatchObject({ code: -32602, data: { cap: 'RPC_MAX_JSON_DEPTH', limit: 64 } });
      expect(reply.error!.message).toMatch(
        /^invalid params: params of eth_\w+ nests deeper than 64 levels of arrays and objects \(RPC_MAX_JSON_DEPTH\)$/,
      );
    }

    // "id":1.0 sends the body through the raw-id scanner, which used to recurse into the params.
    const floatId = await send(rpc.url, request('1.0', 'eth_getBalance', arrays(10_000)));
    expect(floatId.status).toBe(200);
    expect(floatId.text).toMatch(/^\{"jsonrpc":"2.0","id":1\.0,"error":\{"code":-32602,/);
    const bigId = await send(rpc.url, request('12345678901234567890', 'eth_chainId', arrays(10_000)));
    expect(bigId.text).toMatch(/^\{"jsonrpc":"2.0","id":12345678901234567890,"error":\{"code":-32602,/);

    // A deep id is an invalid request: -32600 and id null (the id cannot be echoed).
    for (const id of [arrays(10_000), objects(10_000)]) {
      const r = await send(rpc.url, request(id, 'eth_chainId'));
      expect(r.status).toBe(200);
      expect((r.json as Reply).id).toBeNull();
      expect((r.json as Reply).error).toMatchObject({
        code: -32600,
        message: expect.stringContaining('member "id" nests deeper than 64 levels'),
      });
    }
    // A deep unknown member, and a batch whose element is itself a deep array: -32600 too.
    const member = await send(rpc.url, `{"jsonrpc":"2.0","id":7,"method":"eth_chainId","extra":${arrays(10_000)}}`);
    expect(member.json).toMatchObject({
      id: 7,
      error: { code: -32600, message: expect.stringContaining('member "extra"') },
    });
    const nested = await send(rpc.url, arrays(10_000));
    expect(nested.json).toEqual([
      {
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message: expect.stringContaining('the request nests deeper than 64'),
          data: { cap: 'RPC_MAX_JSON_DEPTH', limit: 64 },
        },
      },
    ]);

    // The worst a body under RPC_MAX_BODY_BYTES can do: 500,000 levels.
    const huge = await send(rpc.url, request('3', 'eth_getBalance', arrays(499_000)));
    expect(huge.status).toBe(200);
    expect((huge.json as Reply).error!.code).toBe(-32602);
    // Deep and not JSON at all: still a parse error.
    expect(
      ((await send(rpc.url, `{"jsonrpc":"2.0","id":1,"params":${'['.repeat(10_000)}`)).json as Reply).error!.code,
    ).toBe(-32700);

    // In a batch only the deep call is refused; a deep notification gets no answer.
    const batch = await send(
      rpc.url,
      `[${request('1.0', 'eth_chainId', '[]')},${request('2', 'eth_getBalance', arrays(10_000))},{"jsonrpc":"2.0","method":"eth_chainId","params":${arrays(100)}}]`,
    );
    expect(batch.text).toMatch(
      /^\[\{"jsonrpc":"2.0","id":1\.0,"result":"0x[0-9a-f]+"\},\{"jsonrpc":"2.0","id":2,"error":\{"code":-32602,/,
    );
    expect(batch.json as Reply[]).toHaveLength(2);
    expect((await post(rpc.url, `{"jsonrpc":"2.0","method":"eth_chainId","params":${arrays(10_000)}}`)).status).toBe(
      204,
    );

    // Many at once while the canary runs.
    const flood = await Promise.all(
      Array.from({ length: 40 }, (_, i) => send(rpc.url, request(String(i), 'eth_getBalance', arrays(20_000)))),
    );
    expect(flood.every((r) => r.status === 200 && (r.json as Reply).error?.code === -32602)).toBe(true);

    const report = await canary.stop();
    expect(report.failed, report.failures.join('\n')).toBe(0);
    const bad = rpc.logs.filter(
      (l) => l.level >= 50 || l.err?.stack !== undefined || /call stack/i.test(JSON.stringify(l)),
    );
    expect(bad).toEqual([]);
  });

  it('behavior: the limit counts every level of the body; at the limit the spec decides, one more is refused', async () => {
    // Object (1) + params array (1) + 62 nested arrays = 64 levels: validated as usual (not an address).
    const atLimit = await send(rpc.url, request('1', 'eth_getBalance', `[${arrays(62)}]`));
    expect((atLimit.json as Reply).error).toMatchObject({ code: -32602 });
    expect((atLimit.json as Reply).error!.message).not.toContain('RPC_MAX_JSON_DEPTH');
    const over = await send(rpc.url, request('1', 'eth_getBalance', `[${arrays(63)}]`));
    expect((over.json as Reply).error!.message).toContain('RPC_MAX_JSON_DEPTH');
    // In a batch the batch array is a level too.
    const batchOver = await send(rpc.url, `[${request('1', 'eth_getBalance', `[${arrays(62)}]`)}]`);
    expect((batchOver.json as Reply[])[0]!.error!.message).toContain('RPC_MAX_JSON_DEPTH');
  });

  it('args: RPC_MAX_JSON_DEPTH is configurable; ordinary requests fit well inside a small limit', async () => {
    const logs = await send(
      narrow.url,
      request(
        '1',
        'eth_getLogs',
        '[{"fromBlock":"0x0","toBlock":"latest","topics":[["0x0000000000000000000000000000000000000000000000000000000000000000"],null]}]',
      ),
    );
    expect((logs.json as Reply).result).toEqual([]);
    const over = await send(narrow.url, request('1', 'eth_getLogs', `[{"topics":[${arrays(6)}]}]`));
    expect((over.json as Reply).error).toMatchObject({ code: -32602, data: { cap: 'RPC_MAX_JSON_DEPTH', limit: 8 } });
    expect((over.json as Reply).error!.message).toContain('deeper than 8 levels');
  });
});
