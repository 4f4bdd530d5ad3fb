import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import type { Anvil } from '../../src/devnet/anvil.js';
import { deployOuter, wallet } from '../rpc/helpers.js';
import { chain, nodeCanary, openTestDb, rssMiB, startRpcUnderTest, type RpcUnderTest } from './rpc-harness.js';
import {
  childRssMiB,
  logTraffic,
  metric,
  normalSubscriber,
  recordingNode,
  wsClient,
  type WsAnswer,
} from './ws-harness.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * Issue 23, item 3: resumed subscriptions escaped the limits. A resume far back cost 1 rate unit however
 * much it read (100 of them read ~1.7 GB from the node), and a resume kept reading after its socket had
 * closed, its subscription left behind for good. Real anvil behind a node that records every call, real
 * sockets; a canary whose every request reaches the node and a normal WebSocket user must be served.
 */
let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let db: Awaited<ReturnType<typeof openTestDb>>;
let traffic: Awaited<ReturnType<typeof logTraffic>>;
const stops: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  db = await openTestDb();
  traffic = await logTraffic(provider, 1);
}, 120_000);
afterAll(async () => {
  await traffic?.stop();
  for (const stop of stops.reverse()) await stop();
  await db?.close();
  await anvil?.stop();
});

/** An endpoint with its own recording node in front of anvil, so the calls counted are its own. */
async function endpoint(
  env: Record<string, string>,
): Promise<{ rpc: RpcUnderTest; node: Awaited<ReturnType<typeof recordingNode>> }> {
  const node = await recordingNode(anvil.url, 64 * 1_048_576);
  stops.push(node.close);
  // Behind one trusted proxy: X-Forwarded-For names the client, so the attackers are not the canary's client.
  const rpc = await startRpcUnderTest({
    db,
    schema: db.schema('rpc'),
    anvil,
    env: { RPC_UPSTREAM_URLS: node.url, RPC_TRUSTED_PROXY_HOPS: '1', ...env },
  });
  stops.push(rpc.stop);
  return { rpc, node };
}

const point = (b: ethers.Block) => ({ resumeAfter: { blockNumber: `0x${b.number.toString(16)}`, blockHash: b.hash } });

describe('adversarial: resumed subscriptions', () => {
  it('behavior: 100 resumes far back over ~5 MB of logs are charged by what they read and refused once the client is over its rate limit; a small resume of another client is served, and so are the canary and the normal subscriber', async () => {
    // ~8,000 logs (~5 MB as eth_getLogs answers) in 32 blocks, then the chain goes on.
    const outer = await deployOuter(wallet(2, provider));
    const address = (await outer.getAddress()).toLowerCase();
    const start = (await provider.getBlock('latest'))!;
    for (let i = 0; i < 32; i++)
      await mined(
        (await outer.getFunction('note')(BigInt(i), ethers.id('history'), 250n)) as ethers.TransactionResponse,
      );
    await provider.send('anvil_mine', ['0x64']);
    const { rpc, node } = await endpoint({ RPC_RATE_LIMIT_PER_SECOND: '50' });
    const wsUrl = rpc.url.replace('http://', 'ws://');
    const normal = await normalSubscriber(wsUrl, traffic.address);
    await normal.progress(2);
    const canary = nodeCanary('ws-far-resumes', rpc.url);
    const rss = { endpoint: rssMiB(), anvil: childRssMiB(anvil.process.pid) };
    const mark = node.calls.length;

    // One resume alone, its client's bucket full: it reads the ~5 MB (about 150 units at 32 KiB a unit,
    // over the 100-unit burst) and is ended; charged 1 unit per call it would have been served.
    const single = await wsClient(wsUrl, '10.1.0.1');
    const alone = await single.call('eth_subscribe', ['logs', { address }, point(start)]);
    expect(alone.error).toMatchObject({
      code: -32005,
      message: expect.stringContaining('RPC_RATE_LIMIT_BYTES_PER_UNIT'),
    });
    expect(Number(/read (\d+) bytes/.exec(alone.error!.message)?.[1])).toBeGreaterThan(4_000_000);
    await single.close();

    // A hundred at once from another client: whatever is admitted runs one at a time and stops at the limit.
    const attacker = await wsClient(wsUrl, '10.1.0.2');
    const answers: WsAnswer[] = await Promise.all(
      Array.from({ length: 100 }, () => attacker.call('eth_subscribe', ['logs', { address }, point(start)])),
    );
    const accepted = answers.filter((a) => typeof a.result === 'string').length;
    const errors = answers.flatMap((a) => (a.error ? [a.error] : []));
    const reads = node.calls.slice(mark).filter((c) => c.method === 'eth_getLogs' && c.range);
    process.stdout.write(
      `ws-far-resumes: ${accepted} accepted, ${errors.length} refused; upstream range eth_getLogs ${reads.length}; pushed to the attacker ${attacker.received()} bytes; endpoint RSS ${rss.endpoint} -> ${rssMiB()} MiB, anvil RSS ${rss.anvil} -> ${childRssMiB(anvil.process.pid)} MiB\n`,
    );
    expect(accepted).toBe(0);
    expect(errors).toHaveLength(100);
    expect(errors.every((e) => e.code === -32005 && e.message.includes('RPC_RATE_LIMIT'))).toBe(true);
    // The single resume's read, and at most one of the hundred (before its client was over the limit).
    expect(reads.length).toBeGreaterThanOrEqual(1);
    expect(reads.length).toBeLessThanOrEqual(2);
    expect(attacker.received()).toBeLessThan(200_000);
    expect(await metric(rpc.url, 'l2stack_rpc_ws_subscriptions', 'kind="logs"')).toBe(1);

    // Another client resuming a few blocks back pays a few units and is served.
    const head = await provider.getBlockNumber();
    const small = await wsClient(wsUrl, '10.1.0.3');
    const sub = await small.call('eth_subscribe', [
      'logs',
      { address: traffic.address },
      point((await provider.getBlock(head - 4))!),
    ]);
    expect(sub.result).toMatch(/^0x[0-9a-f]{32}$/);
    const until = Date.now() + 10_000;
    while (small.count(sub.result as string) < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(small.count(sub.result as string)).toBeGreaterThanOrEqual(3);

    await normal.progress(2);
    await Promise.all([attacker.close(), small.close()]);
    const report = await canary.stop();
    expect(report.failed).toBe(0);
    expect(rpc.logs.filter((l) => l.level >= 50)).toEqual([]);
    await normal.client.close();
  }, 90_000);

  it('behavior: sockets that send 100 newHeads resumes each and disconnect after 100 ms leave no subscription and no upstream work behind', async () => {
    // 3,000 blocks the head tracker does not remember: a newHeads resume reads each header from the node.
    const from = (await provider.getBlock('latest'))!;
    await provider.send('anvil_mine', ['0xbb8']);
    const { rpc, node } = await endpoint({ RPC_RATE_LIMIT_PER_SECOND: '0' });
    const wsUrl = rpc.url.replace('http://', 'ws://');
    const normal = await normalSubscriber(wsUrl, traffic.address);
    await normal.progress(2);
    const canary = nodeCanary('ws-resume-disconnect', rpc.url);
    const rssBefore = rssMiB();
    const farHeaders = () =>
      node.calls.filter(
        (c) =>
          c.method === 'eth_getBlockByNumber' &&
          c.block !== undefined &&
          c.block > from.number &&
          c.block < from.number + 2_900,
      ).length;
    const before = farHeaders();

    await Promise.all(
      Array.from({ length: 5 }, async (_, s) => {
        const c = await wsClient(wsUrl, `10.2.0.${s + 1}`);
        for (let i = 0; i < 100; i++) void c.call('eth_subscribe', ['newHeads', null, point(from)]);
        await new Promise((r) => setTimeout(r, 100));
        c.ws.terminate();
      }),
    );
    // Within a few seconds everything the attackers held is gone: only the normal subscriber's two remain.
    const until = Date.now() + 5_000;
    const held = async () => [
      await metric(rpc.url, 'l2stack_rpc_ws_subscriptions'),
      await metric(rpc.url, 'l2stack_rpc_ws_sockets'),
    ];
    while (JSON.stringify(await held()) !== '[2,1]' && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(await held()).toEqual([2, 1]);
    // Reads already sent when a socket closed (one group of headers per replay) may still reach the node.
    const gone = farHeaders();
    await new Promise((r) => setTimeout(r, 1_000));
    const afterClose = farHeaders();
    await new Promise((r) => setTimeout(r, 1_500));
    const later = farHeaders();
    process.stdout.write(
      `ws-resume-disconnect: far headers read ${gone - before} until the sockets were gone, ${afterClose - gone} in the 1 s after, ${later - afterClose} in the 1.5 s after that; endpoint RSS ${rssBefore} -> ${rssMiB()} MiB\n`,
    );
    expect(later).toBe(afterClose);
    // Bounded: each socket's resumes run one at a time and stop with it, so the five together read less
    // than two whole resumes' headers each (500 resumes × ~2,900 headers went on for minutes before).
    expect(afterClose - before).toBeLessThan(5 * 2 * 2_900);

    await normal.progress(2);
    const report = await canary.stop();
    expect(report.failed).toBe(0);
    await normal.client.close();
    const end = Date.now() + 5_000;
    while ((await metric(rpc.url, 'l2stack_rpc_ws_subscriptions')) !== 0 && Date.now() < end)
      await new Promise((r) => setTimeout(r, 100));
    expect(await metric(rpc.url, 'l2stack_rpc_ws_subscriptions')).toBe(0);
  }, 90_000);
});
