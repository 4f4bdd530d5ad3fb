import { ethers } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Anvil } from '../../src/devnet/anvil.js';
import { boundTracerTimeout, durationMs } from '../../src/rpc/trace/gate.js';
import { countingUpstream, post, wallet, type CountingUpstream, type RpcReply } from '../rpc/helpers.js';
import { waitFor } from '../helpers/chain.js';
import { chain, nodeCanary, openTestDb, sendTransfer, startRpcUnderTest, type RpcUnderTest } from './rpc-harness.js';
import { floodWindow, UNDER_ATTACK } from './canary.js';

/**
 * Issue 35, item 4: traces cost 1 unit whatever the node spent, with no gate: traces of 27M-gas transactions
 * at 50/s (the public limit, no 429) kept ~500 in flight; the L2 stalled, the endpoint marked the node down
 * (-32002), the canary timed out. Now every trace takes one of its client's RPC_TRACE_MAX_PER_CLIENT slots,
 * then the compute gate (RPC_EVM_MAX_CONCURRENT, RPC_EVM_TIMEOUT_MS), is charged by the time the node
 * spent, and a trace of a final block comes from the answer cache (src/rpc/trace/gate.ts). Real anvil
 * behind a counting proxy, real sockets, the rate limit on.
 */
let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let proxy: CountingUpstream;
let db: Awaited<ReturnType<typeof openTestDb>>;
const heavy: { hash: string; block: number }[] = [];
const stops: (() => Promise<unknown>)[] = [];
/** The receipt once anvil mined the transaction (a bounded poll). */
const receiptOf = (hash: string) =>
  waitFor(`receipt of ${hash}`, async () => (await provider.getTransactionReceipt(hash)) ?? undefined, 20_000, 20);

// Init code that returns the 4-byte runtime `JUMPDEST PUSH1 0 JUMP`: it spins until its gas is gone.
const LOOP_INIT = '0x6004600c60003960046000f35b600056';
const GAS = 27_000_000n;
const hex = (n: number) => `0x${n.toString(16)}`;

async function rpc(env: Record<string, string> = {}): Promise<RpcUnderTest> {
  const r = await startRpcUnderTest({
    db,
    schema: db.schema('rpc'),
    anvil: { ...anvil, url: proxy.url },
    env: { RPC_TRUSTED_PROXY_HOPS: '1', RPC_RATE_LIMIT_PER_SECOND: '50', RPC_CACHE_BYTES: '0', ...env },
  });
  stops.push(r.stop);
  return r;
}

const body = (method: string, params: unknown[], id = 1) => JSON.stringify({ jsonrpc: '2.0', id, method, params });
const send = async (url: string, method: string, params: unknown[], from: string) => {
  const r = await post(url, body(method, params), { 'x-forwarded-for': from });
  return { status: r.status, reply: JSON.parse(r.text) as RpcReply };
};
const traces = (): [string, unknown[]][] =>
  heavy.flatMap(({ hash, block }) => [
    ['debug_traceTransaction', [hash, { tracer: 'callTracer' }]],
    ['debug_traceTransaction', [hash, { tracer: 'prestateTracer', tracerConfig: { diffMode: true } }]],
    ['debug_traceBlockByNumber', [hex(block), { tracer: 'callTracer' }]],
  ]);

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  proxy = await countingUpstream(anvil.url);
  db = await openTestDb();
  const signer = wallet(0, provider);
  const loop = (await receiptOf((await signer.sendTransaction({ data: LOOP_INIT })).hash)).contractAddress!;
  // Six transactions that spend 27M gas each in the loop (and fail out of gas, as the did not need to).
  for (let i = 0; i < 6; i++) {
    const tx = await signer.sendTransaction({ to: loop, gasLimit: GAS, data: ethers.toBeHex(i, 1) });
    const receipt = await receiptOf(tx.hash);
    expect(receipt!.gasUsed).toBe(GAS);
    heavy.push({ hash: tx.hash, block: receipt!.blockNumber });
  }
}, 60_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await proxy?.close();
  await anvil?.stop();
  await db?.close();
});

describe('adversarial: traces', () => {
  it('args: a tracer timeout above RPC_EVM_TIMEOUT_MS is lowered to it; a shorter one is kept', () => {
    expect(durationMs('1m30s')).toBe(90_000);
    expect(durationMs('1.5s')).toBe(1_500);
    expect(boundTracerTimeout({ tracer: 'callTracer', timeout: '10s' }, 5_000)).toEqual({
      tracer: 'callTracer',
      timeout: '5000ms',
    });
    expect(boundTracerTimeout({ tracer: 'callTracer', timeout: '1h' }, 5_000)).toEqual({
      tracer: 'callTracer',
      timeout: '5000ms',
    });
    expect(boundTracerTimeout({ tracer: 'callTracer', timeout: '300ms' }, 5_000)).toEqual({
      tracer: 'callTracer',
      timeout: '300ms',
    });
    expect(boundTracerTimeout({ tracer: 'prestateTracer' }, 5_000)).toEqual({ tracer: 'prestateTracer' });
  });

  it('behavior: past RPC_TRACE_MAX_PER_CLIENT traces in flight, the next of that client wait for its slots, not for the node; past the budget they get -32005', async () => {
    const r = await rpc({ RPC_TRACE_MAX_PER_CLIENT: '2', RPC_EVM_TIMEOUT_MS: '1000', RPC_RATE_LIMIT_PER_SECOND: '0' });
    // One batch of five, every call started at once, and a node that never finishes a trace: four execution
    // slots (RPC_EVM_MAX_CONCURRENT) are free, but only the client's two traces may reach the node.
    proxy.hold.add('debug_traceTransaction');
    const before = proxy.counts.get('debug_traceTransaction') ?? 0;
    const batch = JSON.stringify(
      heavy
        .slice(0, 5)
        .map(({ hash }, i) => ({
          jsonrpc: '2.0',
          id: i,
          method: 'debug_traceTransaction',
          params: [hash, { tracer: 'callTracer' }],
        })),
    );
    const replies = JSON.parse((await post(r.url, batch, { 'x-forwarded-for': '10.7.1.1' })).text) as RpcReply[];
    proxy.hold.delete('debug_traceTransaction');
    expect((proxy.counts.get('debug_traceTransaction') ?? 0) - before).toBe(2);
    for (const x of replies)
      expect(x.error).toMatchObject({
        code: -32005,
        data: { cap: expect.stringMatching(/^(RPC_EVM_TIMEOUT_MS|RPC_TRACE_MAX_PER_CLIENT)$/) },
      });
    // Without a held node and at the default budget, the five are all answered, two at a time.
    const easy = await rpc({ RPC_TRACE_MAX_PER_CLIENT: '2', RPC_RATE_LIMIT_PER_SECOND: '0' });
    const served = JSON.parse((await post(easy.url, batch, { 'x-forwarded-for': '10.7.1.2' })).text) as RpcReply[];
    for (const x of served) expect(x.result).toMatchObject({ gasUsed: hex(Number(GAS)) });
  });

  it('behavior: a trace is charged by the time the node spent on it, so the next call of that client is refused', async () => {
    const r = await rpc({ RPC_RATE_LIMIT_PER_SECOND: '1', RPC_RATE_LIMIT_BURST: '3', RPC_RATE_LIMIT_MS_PER_UNIT: '1' });
    // Tracing 27M gas of loop takes the node well over the 2 ms (2 units) left after the call's own unit.
    const traced = await send(
      r.url,
      'debug_traceBlockByNumber',
      [hex(heavy[1]!.block), { tracer: 'callTracer' }],
      '10.7.2.1',
    );
    expect(traced.reply.error).toBeUndefined();
    const next = await send(r.url, 'eth_blockNumber', [], '10.7.2.1');
    expect(next.status).toBe(429);
    expect(next.reply.error?.message).toMatch(/RPC_RATE_LIMIT_MS_PER_UNIT ms the node spent executing it/);
    expect((await send(r.url, 'eth_blockNumber', [], '10.7.2.2')).status).toBe(200);
  });

  it('behavior: clients tracing 27M-gas transactions in a tight loop are throttled; a canary from another address is served and the chain keeps mining', async () => {
    const r = await rpc();
    const canary = nodeCanary('trace flood', r.url, { headers: { 'x-forwarded-for': '10.7.3.200' } });
    const startBlock = await provider.getBlockNumber();
    const outcomes = new Map<string, number>();
    const note = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
    const attack = floodWindow(canary);
    // Four addresses, six calls in flight each, cycling through every trace of every heavy transaction.
    const lanes = Array.from({ length: 24 }, async (_, lane) => {
      for (let i = lane; attack.open(); i += 24) {
        const [method, params] = traces()[i % traces().length]!;
        const { status, reply } = await send(r.url, method, params, `10.7.3.${lane % 4}`);
        const cap = (reply.error?.data as { cap?: string } | undefined)?.cap;
        note(
          status === 429
            ? '429'
            : reply.error
              ? `${reply.error.code} ${cap ?? reply.error.message.slice(0, 60)}`
              : 'ok',
        );
      }
    });
    // A transaction sent mid-attack is mined before the attack ends.
    const receipt = await attack.hold(sendTransfer(r.url, provider, '10.7.3.100').then(receiptOf));
    await Promise.all(lanes);
    const report = await canary.stop();
    process.stdout.write(`trace flood outcomes: ${JSON.stringify(Object.fromEntries(outcomes))}\n`);

    expect(report.failures).toEqual([]);
    expect(report.sent).toBeGreaterThanOrEqual(UNDER_ATTACK);
    expect(receipt?.status).toBe(1);
    expect(await provider.getBlockNumber()).toBeGreaterThan(startBlock);
    for (const k of outcomes.keys())
      expect(k).toMatch(/^(ok|429|-32005 RPC_TRACE_MAX_PER_CLIENT|-32005 RPC_EVM_TIMEOUT_MS)$/);
    expect(outcomes.get('ok') ?? 0).toBeGreaterThan(0);
    expect(outcomes.get('429') ?? 0).toBeGreaterThan(0);
    expect(r.logs.filter((l) => l.msg === 'upstream is not answering')).toEqual([]);
  }, 60_000);

  it('behavior: traces of final blocks come from the answer cache: the node traces each once', async () => {
    // 70 blocks on top, so anvil reports the heavy transactions' blocks as finalized (head - 64); the
    // endpoint reads the finalized block when it starts.
    await provider.send('anvil_mine', ['0x46']);
    const r = await rpc({ RPC_CACHE_BYTES: '67108864', RPC_RATE_LIMIT_PER_SECOND: '0' });
    const { hash, block } = heavy[2]!;
    const blockHash = (await provider.getBlock(block))!.hash!;
    const calls: [string, unknown[]][] = [
      ['debug_traceTransaction', [hash, { tracer: 'callTracer' }]],
      ['debug_traceBlockByNumber', [hex(block), { tracer: 'callTracer' }]],
      ['debug_traceBlockByHash', [blockHash, { tracer: 'prestateTracer' }]],
      ['trace_transaction', [hash]],
    ];
    for (const [method, params] of calls) {
      // trace_transaction is the node's own (anvil serves it) or converted from debug_traceTransaction.
      const asked = () =>
        (proxy.counts.get(method) ?? 0) +
        (method === 'trace_transaction' ? (proxy.counts.get('debug_traceTransaction') ?? 0) : 0);
      const first = await send(r.url, method, params, '10.7.4.1');
      const before = asked();
      const again = await send(r.url, method, params, '10.7.4.2');
      expect(again.reply, method).toEqual({ ...first.reply });
      expect(asked(), method).toBe(before);
    }
  });
});
