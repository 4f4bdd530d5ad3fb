import { ethers } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Anvil } from '../../src/devnet/anvil.js';
import { countingUpstream, post, wallet, type RpcReply } from '../rpc/helpers.js';
import { chain, nodeCanary, openTestDb, sendTransfer, startRpcUnderTest, type RpcUnderTest } from './rpc-harness.js';
import { floodWindow, UNDER_ATTACK } from './canary.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * Issue 23, item 1: `eth_call {to: C, gas: 2^64-1}` where C's runtime code is an endless loop (`5b600056`)
 * held anvil for good (no block mined, every state read timed out), and 32 addresses sending such calls at
 * gas 1e9 timed out every client. Real anvil, real sockets, the rate limit on; a normal client whose every
 * request reaches the node (nodeCanary: eth_blockNumber + eth_getBalance of a fresh address) must be served
 * throughout, and the node must keep mining.
 */
let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let db: Awaited<ReturnType<typeof openTestDb>>;
let loop: string;
const stops: (() => Promise<unknown>)[] = [];

// Init code that returns the 4-byte runtime `JUMPDEST PUSH1 0 JUMP`: it spins until its gas is gone.
const LOOP_INIT = '0x6004600c60003960046000f35b600056';
const UNBOUNDED = '0xffffffffffffffff';
const CAP = 50_000_000n;

async function rpc(env: Record<string, string> = {}, upstream = anvil): Promise<RpcUnderTest> {
  const r = await startRpcUnderTest({
    db,
    schema: db.schema('rpc'),
    anvil: upstream,
    env: { RPC_TRUSTED_PROXY_HOPS: '1', RPC_RATE_LIMIT_PER_SECOND: '50', ...env },
  });
  stops.push(r.stop);
  return r;
}

const body = (method: string, params: unknown[], id = 1) => JSON.stringify({ jsonrpc: '2.0', id, method, params });
const send = async (url: string, method: string, params: unknown[], from: string) => {
  const r = await post(url, body(method, params), { 'x-forwarded-for': from });
  return { status: r.status, reply: JSON.parse(r.text) as RpcReply };
};

/** The worst call of each class: as much gas as the endpoint allows, or none given (the endpoint fills the cap). */
const worst = (to: string): [string, unknown[]][] => [
  ['eth_call', [{ to, gas: `0x${CAP.toString(16)}` }, 'latest']],
  ['eth_call', [{ to }]],
  ['eth_estimateGas', [{ to }]],
  ['debug_traceCall', [{ to, gas: `0x${CAP.toString(16)}` }, 'latest', { tracer: 'callTracer' }]],
  ['svc_estimateGas', [{ to }]],
  // Refused by the cap; forwarded as is, as before, it would hold anvil for good.
  ['eth_call', [{ to, gas: UNBOUNDED }, 'latest']],
];

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  db = await openTestDb();
  const tx = await wallet(0, provider).sendTransaction({ data: LOOP_INIT });
  loop = (await mined(tx))!.contractAddress!;
  expect(await provider.getCode(loop)).toBe('0x5b600056');
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await anvil?.stop();
  await db?.close();
});

describe('adversarial: gas bomb', () => {
  it('error: gas 2^64-1 on every call that executes is refused with -32602 naming the cap, before the node sees it', async () => {
    const r = await rpc();
    for (const [method, params] of [
      ['eth_call', [{ to: loop, gas: UNBOUNDED }, 'latest']],
      ['eth_estimateGas', [{ to: loop, gas: UNBOUNDED }]],
      ['debug_traceCall', [{ to: loop, gas: UNBOUNDED }, 'latest', { tracer: 'callTracer' }]],
      ['svc_estimateGas', [{ to: loop, gas: UNBOUNDED }]],
      ['vendor_simulateAssetChanges', [{ to: loop, gas: UNBOUNDED }]],
    ] as const) {
      const started = performance.now();
      const { status, reply } = await send(r.url, method, [...params], '10.9.0.1');
      expect(status, method).toBe(200);
      expect(reply.error, method).toMatchObject({ code: -32602, data: { cap: 'RPC_GAS_CAP', limit: '0x2faf080' } });
      expect(reply.error!.message, method).toContain('gas cap of 50000000 (RPC_GAS_CAP)');
      // Refused here: the node never spins (an endless loop at 2^64-1 gas would not answer at all).
      expect(performance.now() - started, method).toBeLessThan(5_000);
    }
    const { reply } = await send(r.url, 'eth_call', [{ to: loop, gas: UNBOUNDED }], '10.9.0.1');
    expect(reply.error!.message).toMatchInlineSnapshot(
      `"Invalid params: param 0 (transaction): gas 18446744073709551615 is above this endpoint's gas cap of 50000000 (RPC_GAS_CAP); send gas at most 50000000, or leave gas out to get the cap"`,
    );
  });

  it('behavior: 32 addresses sending the worst call of each class: the canary is served and the node keeps mining', async () => {
    const r = await rpc();
    const canary = nodeCanary('gas bomb', r.url);
    const startBlock = await provider.getBlockNumber();
    const outcomes = new Map<string, number>();
    const note = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
    const attack = floodWindow(canary);
    const attackers = Array.from({ length: 32 }, async (_, a) => {
      const from = `10.0.${a >> 8}.${a & 255}`;
      // Two calls in flight per address, cycling through every class.
      await Promise.all(
        [0, 1].map(async (lane) => {
          for (let i = lane; attack.open(); i += 2) {
            const [method, params] = worst(loop)[i % 6]!;
            const { status, reply } = await send(r.url, method, params, from);
            const e = reply.error;
            note(status === 429 ? '429' : e ? `${method} ${e.code} ${e.message.slice(0, 60)}` : `${method} ok`);
          }
        }),
      );
    });
    // A transaction sent through the endpoint mid-attack (once the attack has run for a while) is mined and its
    // receipt is served, all before the attack ends.
    const receipt = await attack.hold(
      (async () => {
        await new Promise((res) => setTimeout(res, 1_000));
        const hash = await sendTransfer(r.url, provider, '10.1.0.1');
        let mined = null as { status?: string } | null;
        for (let i = 0; i < 100 && !mined; i++) {
          mined = (await send(r.url, 'eth_getTransactionReceipt', [hash], '10.1.0.1')).reply.result as typeof mined;
          if (!mined) await new Promise((res) => setTimeout(res, 50));
        }
        return mined;
      })(),
    );
    await Promise.all(attackers);
    const report = await canary.stop();
    process.stdout.write(`gas bomb outcomes: ${JSON.stringify(Object.fromEntries(outcomes))}\n`);

    expect(report.failures).toEqual([]);
    expect(report.sent).toBeGreaterThanOrEqual(UNDER_ATTACK);
    expect(receipt?.status).toBe('0x1');
    expect(await provider.getBlockNumber()).toBeGreaterThan(startBlock);
    // Every answer is the node's out-of-gas verdict (its gas was bounded) or a limit of ours (-32005, 429):
    // never "no upstream is available" (-32002), which is what a held node gave every client.
    for (const k of outcomes.keys())
      expect(k).toMatch(
        /^(429|eth_call -32603 EVM error OutOfGas|(eth|svc)_estimateGas -32003 Out of gas.*|debug_traceCall ok|eth_call -32602 Invalid params: param 0 \(transaction\): gas.*|\S+ -32005 .*)$/,
      );
    expect([...outcomes.keys()].some((k) => k.startsWith('debug_traceCall ok'))).toBe(true);
    // The node is still up for everyone: the pool never marked it down.
    expect(r.logs.filter((l) => l.msg === 'upstream is not answering')).toEqual([]);
  }, 60_000);

  it('behavior: a call is charged by the time it kept the node executing, so the next one of that client is refused', async () => {
    const r = await rpc({ RPC_RATE_LIMIT_PER_SECOND: '1', RPC_RATE_LIMIT_BURST: '3', RPC_RATE_LIMIT_MS_PER_UNIT: '1' });
    // A 50M-gas loop runs tens of ms on the node: at 1 ms per unit far more than the 2 units left after it.
    const bomb = await send(r.url, 'eth_call', [{ to: loop }], '10.2.0.1');
    expect(bomb.reply.error?.message).toMatch(/OutOfGas/);
    const next = await send(r.url, 'eth_blockNumber', [], '10.2.0.1');
    expect(next.status).toBe(429);
    expect(next.reply.error?.code).toBe(-32005);
    expect(next.reply.error?.message).toMatch(/RPC_RATE_LIMIT_MS_PER_UNIT ms the node spent executing it/);
    // Another address is not affected.
    expect((await send(r.url, 'eth_blockNumber', [], '10.2.0.2')).status).toBe(200);
  });

  it('error: a call running past RPC_EVM_TIMEOUT_MS, and one queued past it, get -32005 naming it; the node stays up', async () => {
    // A cap raised to 2e9 (about 1.4 s of loop on anvil here) against a 300 ms budget, one slot.
    const r = await rpc({
      RPC_GAS_CAP: '2000000000',
      RPC_EVM_TIMEOUT_MS: '300',
      RPC_EVM_MAX_CONCURRENT: '1',
      RPC_RATE_LIMIT_PER_SECOND: '0',
    });
    // Six arrive together: each gets the one slot only when the one before it is cut at its budget, so
    // the first runs out of time on the node and those behind it (a few ms apart) run out of time waiting.
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => send(r.url, 'eth_call', [{ to: loop, data: `0x0${i}` }], `10.3.0.${i}`)),
    );
    for (const a of answers)
      expect(a.reply.error).toMatchObject({ code: -32005, data: { cap: 'RPC_EVM_TIMEOUT_MS', limit: 300 } });
    const messages = new Set(answers.map((a) => a.reply.error!.message));
    expect([...messages].sort()).toMatchInlineSnapshot(`
      [
        "execution timeout: eth_call did not finish on the node within 300 ms (RPC_EVM_TIMEOUT_MS = 300); it was abandoned. Send less gas or a cheaper call, or try again later.",
        "execution timeout: eth_call waited 300 ms for one of the node's execution slots (RPC_EVM_MAX_CONCURRENT) without getting one (RPC_EVM_TIMEOUT_MS = 300); it was abandoned. Send less gas or a cheaper call, or try again later.",
      ]
    `);
    // A slow call is its own cost, not a dead node: reads are served and the node was never marked down.
    expect((await send(r.url, 'eth_getBalance', [wallet(3).address, 'latest'], '10.3.0.3')).reply.result).toMatch(
      /^0x/,
    );
    expect(r.logs.filter((l) => l.msg === 'upstream is not answering')).toEqual([]);
  }, 30_000);
});

describe('adversarial: frozen node', () => {
  it('behavior: an anvil held by an endless execution (the cap lifted to 2^64-1) is not ready, though its head still answers', async () => {
    // A chain of its own: this one is held for good and then killed.
    const { anvil: held, provider: heldProvider } = await chain();
    stops.push(async () => {
      held.process.kill('SIGKILL');
    });
    const deployed = await mined(wallet(0, heldProvider).sendTransaction({ data: LOOP_INIT }));
    const r = await rpc(
      { RPC_GAS_CAP: '18446744073709551615', RPC_EVM_TIMEOUT_MS: '500', RPC_RATE_LIMIT_PER_SECOND: '0' },
      held,
    );
    expect((await fetch(`${r.url}/health/ready`)).status).toBe(200);
    // What the issue sent: with the cap lifted it reaches anvil, which never stops executing it.
    const bomb = await send(r.url, 'eth_call', [{ to: deployed!.contractAddress, gas: UNBOUNDED }], '10.4.0.1');
    expect(bomb.reply.error).toMatchObject({ code: -32005, data: { cap: 'RPC_EVM_TIMEOUT_MS' } });
    // A transaction to mine: the block waits for the execution, and state reads wait behind the block.
    const signer = wallet(1, heldProvider);
    const raw = await signer.signTransaction(
      await signer.populateTransaction({
        to: wallet(2).address,
        value: 1n,
        gasLimit: 21_000n,
        chainId: 1337n,
        nonce: 0,
      }),
    );
    void post(held.url, body('eth_sendRawTransaction', [raw])).catch(() => undefined);
    await new Promise((res) => setTimeout(res, 1_100)); // past the 1 s the last probe is shared
    const ready = await fetch(`${r.url}/health/ready`);
    const json = (await ready.json()) as { checks: { name: string; ok: boolean; detail?: string }[] };
    expect(ready.status).toBe(503);
    expect(json.checks.find((c) => c.name === 'node')).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/within 2000 ms/),
    });
    expect(json.checks.find((c) => c.name === 'upstreams')?.ok).toBe(true);
    held.process.kill('SIGKILL');
  }, 60_000);

  it('behavior: /health/ready says not ready when the node answers heads but no state read', async () => {
    const proxy = await countingUpstream(anvil.url);
    stops.push(proxy.close);
    const r = await rpc({ RPC_RATE_LIMIT_PER_SECOND: '0' }, { ...anvil, url: proxy.url });
    const ready = await fetch(`${r.url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      status: 'ok',
      checks: expect.arrayContaining([{ name: 'node', ok: true }]),
    });
    // As anvil held by an endless execution: heads still come (the tracker answers eth_blockNumber), state never does.
    proxy.hold.add('eth_getBalance');
    await new Promise((res) => setTimeout(res, 1_100)); // past the 1 s the last probe is shared
    const frozen = await fetch(`${r.url}/health/ready`);
    const json = (await frozen.json()) as { status: string; checks: { name: string; ok: boolean; detail?: string }[] };
    expect(frozen.status).toBe(503);
    expect(json.status).toBe('unavailable');
    const node = json.checks.find((c) => c.name === 'node');
    expect(node).toEqual({
      name: 'node',
      ok: false,
      detail:
        'no node answered a state read (eth_getBalance at latest) within 2000 ms: u0: upstream did not answer within 2000 ms',
    });
    // The head check alone would have said ready: that is the case this check exists for.
    expect(json.checks.find((c) => c.name === 'upstreams')?.ok).toBe(true);
    expect((await post(r.url, body('eth_blockNumber', []))).status).toBe(200);
  }, 30_000);
});
