import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Counter } from 'prom-client';
import type { ethers } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { chain, result, startTestRpc, wallet } from './helpers.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { mined } from '../../src/common/chain/mined.js';
import { waitFor } from '../helpers/chain.js';

let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let off: Awaited<ReturnType<typeof startTestRpc>>;

/** Upstream requests this endpoint made (every outcome), from its own metrics. */
async function upstreamCalls(r: typeof rpc): Promise<number> {
  const m = r.common.metrics.getSingleMetric('l2stack_rpc_upstream_requests_total') as Counter | undefined;
  return ((await m?.get())?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

async function cacheLookups(r: typeof rpc, outcome: 'hit' | 'miss'): Promise<number> {
  const m = r.common.metrics.getSingleMetric('l2stack_rpc_cache_lookups_total') as Counter | undefined;
  return ((await m?.get())?.values ?? []).find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

/** Waits (bounded) until `probe` holds: the head arrives by subscription, a moment after the block. */
const until = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, 5_000, 25);

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  // Enough blocks that anvil reports a finalized block above 0.
  await provider.send('anvil_mine', ['0x80']);
  db = await openTestDb();
  // Polls only at start (finalized is read then): every later upstream request is one this test caused.
  const env = { RPC_UPSTREAM_HEAD_POLL_MS: '600000' };
  rpc = await startTestRpc({ db: db.client, schema: db.schema('rpc'), upstreams: [anvil.url], env });
  off = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc'),
    upstreams: [anvil.url],
    env: { ...env, RPC_CACHE_BYTES: '0' },
  });
});

afterAll(async () => {
  await rpc?.stop();
  await off?.stop();
  await anvil?.stop();
  await db?.close();
});

describe('answer cache', () => {
  it('behavior: answers that cannot change are served from memory (chain id, a finalized block with its transactions)', async () => {
    const finalized = (await result(anvil.url, 'eth_getBlockByNumber', ['finalized', false])) as { number: string };
    expect(BigInt(finalized.number)).toBeGreaterThan(0n);
    const before = await upstreamCalls(rpc);
    const hits = await cacheLookups(rpc, 'hit');
    const first = await result(rpc.url, 'eth_getBlockByNumber', ['0x1', true]);
    for (let i = 0; i < 5; i++) expect(await result(rpc.url, 'eth_getBlockByNumber', ['0x1', true])).toEqual(first);
    for (let i = 0; i < 3; i++) expect(await result(rpc.url, 'eth_chainId', [])).toBe('0x539');
    expect(await upstreamCalls(rpc)).toBe(before + 2);
    expect(await cacheLookups(rpc, 'hit')).toBe(hits + 7);
    expect(first).toEqual(await result(anvil.url, 'eth_getBlockByNumber', ['0x1', true]));
  });

  it('behavior: reads at latest hold until the head moves, then the new state is answered', async () => {
    const who = wallet(5).address;
    const balance = async () => BigInt((await result(rpc.url, 'eth_getBalance', [who, 'latest'])) as string);
    const start = await balance();
    const before = await upstreamCalls(rpc);
    await balance();
    await balance();
    expect(await upstreamCalls(rpc)).toBe(before);
    // A transfer made on the node directly (not through the endpoint): only the new head tells us.
    const tx = await wallet(0, provider).sendTransaction({ to: who, value: 1234n });
    await mined(tx);
    expect(await until('the new balance', async () => ((await balance()) === start + 1234n ? true : undefined))).toBe(
      true,
    );
    expect(BigInt((await result(off.url, 'eth_getBalance', [who, 'latest'])) as string)).toBe(start + 1234n);
  });

  it('behavior: a reorg drops what was true at the old head (latest block, block by number)', async () => {
    const latest = (await result(rpc.url, 'eth_getBlockByNumber', ['latest', false])) as {
      number: string;
      hash: string;
    };
    expect(await result(rpc.url, 'eth_getBlockByNumber', [latest.number, false])).toMatchObject({ hash: latest.hash });
    // The node replaces its last block by another one of the same number.
    await provider.send('anvil_reorg', [1, []]);
    const replaced = (await result(anvil.url, 'eth_getBlockByNumber', [latest.number, false])) as { hash: string };
    expect(replaced.hash).not.toBe(latest.hash);
    await until('the reorged block', async () =>
      ((await result(rpc.url, 'eth_getBlockByNumber', ['latest', false])) as { hash: string }).hash === replaced.hash
        ? true
        : undefined,
    );
    expect(await result(rpc.url, 'eth_getBlockByNumber', [latest.number, false])).toMatchObject({
      hash: replaced.hash,
    });
  });

  it('behavior: nothing pending and no unknown block is kept; with RPC_CACHE_BYTES=0 every read goes to the node', async () => {
    const before = await upstreamCalls(rpc);
    await result(rpc.url, 'eth_getBlockByNumber', ['pending', false]);
    await result(rpc.url, 'eth_getBlockByNumber', ['pending', false]);
    const unknown = `0x${'ab'.repeat(32)}`;
    expect(await result(rpc.url, 'eth_getBlockByHash', [unknown, false])).toBeNull();
    expect(await result(rpc.url, 'eth_getBlockByHash', [unknown, false])).toBeNull();
    expect(await upstreamCalls(rpc)).toBe(before + 4);
    const offBefore = await upstreamCalls(off);
    for (let i = 0; i < 3; i++) await result(off.url, 'eth_chainId', []);
    expect(await upstreamCalls(off)).toBe(offBefore + 3);
  });
});
