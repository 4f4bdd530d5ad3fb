import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import type { Anvil } from '../../src/devnet/anvil.js';
import { openTestDb } from '../helpers/db.js';
import { waitFor } from '../helpers/chain.js';
import { metric, wsClient } from '../adversarial/ws-harness.js';
import { chain, countingUpstream, deployOuter, startTestRpc, wallet, type CountingUpstream } from './helpers.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * A block's logs the node keeps refusing: the hub asks a bounded number of times, then tells each logs
 * subscription that needed them and ends it, instead of holding every later block (and, before, every
 * head) for good. Real anvil behind a proxy that answers eth_getLogs with the node's JSON-RPC error.
 */
let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let proxy: CountingUpstream;
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  proxy = await countingUpstream(anvil.url);
  testDb = await openTestDb();
  rpc = await startTestRpc({ db: testDb.client, schema: testDb.schema('rpc'), upstreams: [proxy.url] });
}, 120_000);
afterAll(async () => {
  await rpc?.stop();
  await testDb?.close();
  await proxy?.close();
  await anvil?.stop();
});

describe('subscriptions when the node never gives a block its logs', () => {
  it('behavior: heads keep flowing while the read is retried; then the logs subscription receives one error naming the block and resumeAfter, is ended, and a resume from its last log gets what it missed', async () => {
    const outer = await deployOuter(wallet(0, provider));
    const address = (await outer.getAddress()).toLowerCase();
    const note = async (n: number) =>
      mined((await outer.getFunction('note')(BigInt(n), ethers.id('ended'), 1n)) as ethers.TransactionResponse);
    const c = await wsClient(rpc.url.replace('http://', 'ws://'));
    const logs = (await c.call('eth_subscribe', ['logs', { address }])).result as string;
    const heads = (await c.call('eth_subscribe', ['newHeads'])).result as string;
    await note(1);
    await waitFor('the first log', async () => (c.count(logs) === 1 ? true : undefined), 20_000);
    const lastLog = c.last(logs)!;

    proxy.failNext.set(
      'eth_getLogs',
      Array.from({ length: 1_000 }, () => 'rpc' as const),
    );
    const headsBefore = c.count(heads);
    for (let i = 2; i <= 4; i++) await note(i);
    // The heads of the three blocks arrive while their logs are still being asked for.
    await waitFor('three heads', async () => (c.count(heads) >= headsBefore + 3 ? true : undefined), 20_000);
    expect(c.ended(logs)).toBeUndefined();
    const ended = await waitFor('the logs subscription ended', async () => c.ended(logs), 30_000);
    proxy.failNext.delete('eth_getLogs');
    expect(ended.message).toMatch(
      /^logs of block \d+ could not be read from the node after 8 attempts \(.*header not found.*\); this subscription has ended: subscribe again with \{"resumeAfter": <the last log you processed>\}/,
    );
    expect(c.count(logs)).toBe(1);
    expect((await c.call('eth_unsubscribe', [logs])).result).toBe(false);
    expect(await metric(rpc.url, 'l2stack_rpc_ws_logs_ended_total')).toBeGreaterThanOrEqual(1);
    expect(await metric(rpc.url, 'l2stack_rpc_ws_subscriptions', 'kind="logs"')).toBe(0);

    // Nothing was skipped silently: resuming after the last log processed delivers the three missed ones.
    const again = (
      await c.call('eth_subscribe', [
        'logs',
        { address },
        { resumeAfter: { blockNumber: lastLog.blockNumber, blockHash: lastLog.blockHash, logIndex: lastLog.logIndex } },
      ])
    ).result as string;
    await waitFor('the missed logs', async () => (c.count(again) >= 3 ? true : undefined), 20_000);
    await note(5);
    await waitFor('a live log', async () => (c.count(again) >= 4 ? true : undefined), 20_000);
    expect(c.count(again)).toBe(4);
    expect(BigInt(c.last(again)!.topics![1]!)).toBe(5n);
    await c.close();
  }, 90_000);

  it('behavior: a block whose logs are too big for one answer is read by address, halving parts until each answer fits, and every subscriber gets its logs', async () => {
    // Parts of 11 addresses (1 KiB bodies) and answers of at most 5,000 bytes: 6 logs of one contract
    // (~3.5 KB) fit, 12 of two do not.
    const small = await startTestRpc({
      db: testDb.client,
      schema: testDb.schema('rpc'),
      upstreams: [anvil.url],
      env: { RPC_UPSTREAM_MAX_BATCH_BYTES: '1024', RPC_MAX_RESPONSE_BYTES: '5000' },
    });
    try {
      const [a, b] = await Promise.all([deployOuter(wallet(3, provider)), deployOuter(wallet(4, provider))]);
      const [addrA, addrB] = [(await a.getAddress()).toLowerCase(), (await b.getAddress()).toLowerCase()];
      const c = await wsClient(small.url.replace('http://', 'ws://'));
      // 45 addresses: more than 4 parts, so the block is first read unfiltered, which is too big; then by
      // parts, and the first part (both contracts) is too big too, so it is halved until they are apart.
      const fillers = Array.from({ length: 43 }, (_, i) => `0x${(0xf00000 + i).toString(16).padStart(40, '0')}`);
      const subA = (await c.call('eth_subscribe', ['logs', { address: [addrA, addrB, ...fillers] }])).result as string;
      const subB = (await c.call('eth_subscribe', ['logs', { address: addrB }])).result as string;
      expect(subA).toMatch(/^0x/);
      expect(subB).toMatch(/^0x/);
      // Both transactions in one block.
      await provider.send('evm_setAutomine', [false]);
      try {
        const txs = (await Promise.all([
          a.getFunction('note')(1n, ethers.id('big'), 6n),
          b.getFunction('note')(2n, ethers.id('big'), 6n),
        ])) as ethers.TransactionResponse[];
        await provider.send('evm_mine', []);
        const [ra, rb] = await Promise.all(txs.map((t) => mined(t)));
        expect(ra!.blockNumber).toBe(rb!.blockNumber);
        const both = JSON.stringify(await provider.send('eth_getLogs', [{ blockHash: ra!.blockHash }]));
        const one = JSON.stringify(await provider.send('eth_getLogs', [{ blockHash: ra!.blockHash, address: addrA }]));
        expect([one.length < 4_500, both.length > 5_000]).toEqual([true, true]);
      } finally {
        await provider.send('evm_setAutomine', [true]);
      }
      await waitFor(
        'both subscribers served',
        async () => (c.count(subA) >= 12 && c.count(subB) >= 6 ? true : undefined),
        30_000,
      );
      expect([c.count(subA), c.count(subB)]).toEqual([12, 6]);
      expect(c.ended(subA) ?? c.ended(subB)).toBeUndefined();
      expect(await metric(small.url, 'l2stack_rpc_ws_logs_reads_total', 'outcome="split"')).toBeGreaterThanOrEqual(1);
      await c.close();
    } finally {
      await small.stop();
    }
  }, 90_000);
});
