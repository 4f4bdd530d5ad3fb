import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { call, chain, countingUpstream, result, startTestRpc, wallet, type CountingUpstream } from './helpers.js';
import type { Anvil } from '../../src/devnet/anvil.js';

let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let node: CountingUpstream;
let db: Awaited<ReturnType<typeof openTestDb>>;
let a: Awaited<ReturnType<typeof startTestRpc>>;
let b: Awaited<ReturnType<typeof startTestRpc>>;

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  node = await countingUpstream(anvil.url);
  db = await openTestDb();
  const schema = db.schema('rpc');
  // Two replicas on one database, each watching the node through the proxy (which can make the node "forget").
  const env = { RPC_WS_PENDING_POLL_MS: String(TICK_MS) };
  a = await startTestRpc({ db: db.client, schema, upstreams: [node.url], env });
  b = await startTestRpc({ db: db.client, schema, upstreams: [node.url], env });
});

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await node?.close();
  await anvil?.stop();
  await db?.close();
});

/** The watches' poll period here (RPC_WS_PENDING_POLL_MS). */
const TICK_MS = 100;
let nonceOf = 0;
async function send(n: number): Promise<string[]> {
  const signer = new ethers.NonceManager(wallet(3, provider));
  const hashes: string[] = [];
  for (let i = 0; i < n; i++)
    hashes.push((await signer.sendTransaction({ to: wallet(4).address, value: BigInt(++nonceOf) })).hash);
  return hashes;
}

/**
 * Polls the replicas in turn until `want` hashes came, or `want` says enough (or 100 polls), returning every hash each
 * poll gave.
 */
async function collect(id: string, urls: string[], want: number | ((got: string[]) => boolean)): Promise<string[]> {
  const got: string[] = [];
  const enough = typeof want === 'number' ? () => got.length >= want : () => want(got);
  for (let i = 0; i < 100 && !enough(); i++) {
    got.push(...((await result(urls[i % urls.length]!, 'eth_getFilterChanges', [id])) as string[]));
    if (!enough()) await new Promise((r) => setTimeout(r, 50));
  }
  return got;
}

describe('eth_newPendingTransactionFilter across replicas', () => {
  it("behavior: reports the same hashes as the node's own filter, each once, polls alternating between replicas", async () => {
    const direct = await result(anvil.url, 'eth_newPendingTransactionFilter');
    const id = await result(a.url, 'eth_newPendingTransactionFilter');
    const sent = await send(4);
    const got = await collect(id, [b.url, a.url], sent.length);
    expect(got.sort()).toEqual(sent.map((h) => h.toLowerCase()).sort());
    expect(
      (await result(anvil.url, 'eth_getFilterChanges', [direct])).map((h: string) => h.toLowerCase()).sort(),
    ).toEqual(got);
    // Nothing twice, whichever replica is asked next.
    expect(await result(a.url, 'eth_getFilterChanges', [id])).toEqual([]);
    expect(await result(b.url, 'eth_getFilterChanges', [id])).toEqual([]);
    // Hashes from before the filter was made are not reported.
    const later = await result(b.url, 'eth_newPendingTransactionFilter');
    const more = await send(2);
    expect((await collect(later, [a.url, b.url], 2)).sort()).toEqual(more.map((h) => h.toLowerCase()).sort());
    expect(await result(a.url, 'eth_uninstallFilter', [later])).toBe(true);
    expect((await call(b.url, 'eth_getFilterChanges', [later])).error?.message).toContain('filter not found');
  });

  it('behavior: polls racing on two replicas deliver each hash exactly once', async () => {
    const id = await result(b.url, 'eth_newPendingTransactionFilter');
    const sent = await send(6);
    const got: string[] = [];
    for (let i = 0; i < 100 && got.length < sent.length; i++) {
      const [x, y] = await Promise.all([
        result(a.url, 'eth_getFilterChanges', [id]),
        result(b.url, 'eth_getFilterChanges', [id]),
      ]);
      got.push(...(x as string[]), ...(y as string[]));
    }
    expect(got.sort()).toEqual(sent.map((h) => h.toLowerCase()).sort());
  });

  it('behavior: a node slower than three polls is no death of the watches: a replica starting its own records no gap', async () => {
    const id = await result(a.url, 'eth_newPendingTransactionFilter');
    const sent = (await send(2)).map((h) => h.toLowerCase());
    // The node answers the watches' collections 20 ticks late, so none has had an answer for more than three when a
    // third replica starts its watch and asks whether any other is alive. They beat on every tick, apart from the
    // node's answers (when they beat after them, the third replica recorded a gap here).
    node.delay.set('eth_getFilterChanges', 20 * TICK_MS);
    const c = await startTestRpc({
      db: db.client,
      schema: db.schema('rpc'),
      upstreams: [node.url],
      env: { RPC_WS_PENDING_POLL_MS: String(TICK_MS) },
    });
    try {
      await new Promise((r) => setTimeout(r, 5 * TICK_MS)); // the slow answers have lasted more than three ticks
      const first = await call(c.url, 'eth_getFilterChanges', [id]); // starts c's watch
      node.delay.clear();
      expect(first.error).toBeUndefined();
      const got = first.result as string[];
      got.push(...(await collect(id, [c.url, a.url], (g) => sent.every((h) => got.includes(h) || g.includes(h)))));
      expect(got.sort()).toEqual(sent.sort());
    } finally {
      node.delay.clear();
      await c.stop();
    }
  });

  it("error: when the node forgot the endpoint's watch, the poll says hashes may be missed (never []), and a new filter works", async () => {
    const id = await result(a.url, 'eth_newPendingTransactionFilter');
    // The node answers the watch's next poll with an error, as it does for a filter it no longer holds.
    node.failNext.set('eth_getFilterChanges', ['rpc']);
    const before = (await send(1)).map((h) => h.toLowerCase());
    let r = await call(b.url, 'eth_getFilterChanges', [id]);
    for (let i = 0; i < 100 && !r.error; i++) {
      expect(r.result).toEqual([]);
      await new Promise((res) => setTimeout(res, 50));
      r = await call(i % 2 ? a.url : b.url, 'eth_getFilterChanges', [id]);
    }
    expect(node.failed).toContain('eth_getFilterChanges:rpc');
    expect(r.error?.code).toBe(-32000);
    expect(r.error?.message).toContain('may have been missed');
    expect((await call(a.url, 'eth_getFilterChanges', [id])).error?.message).toContain('filter not found');
    const fresh = await result(b.url, 'eth_newPendingTransactionFilter');
    const sent = (await send(2)).map((h) => h.toLowerCase());
    const got = await collect(fresh, [a.url, b.url], (g) => sent.every((h) => g.includes(h)));
    // Every hash sent after it, once. The one sent before the node forgot may come too: the replica's re-made
    // watch can first see it after this filter began (CI, a loaded run); nothing else may.
    expect(got.filter((h) => !before.includes(h)).sort()).toEqual(sent.sort());
    expect(new Set(got).size).toBe(got.length);
  });

  it('error: when every replica that watched has stopped, a replica polled later says hashes may have been missed', async () => {
    // Its own schema: replicas a and b (still watching for the filters above) would have seen the hashes.
    const schema = db.schema('rpc_lone');
    const env = { RPC_WS_PENDING_POLL_MS: String(TICK_MS) };
    const lone = await startTestRpc({ db: db.client, schema, upstreams: [node.url], env });
    const id = await result(lone.url, 'eth_newPendingTransactionFilter');
    await lone.stop();
    await send(2); // nobody watches the node now
    await new Promise((r) => setTimeout(r, 500)); // the stopped watch's last beat is older than three polls
    const later = await startTestRpc({ db: db.client, schema, upstreams: [node.url], env });
    try {
      const r = await call(later.url, 'eth_getFilterChanges', [id]);
      expect(r.error?.code).toBe(-32000);
      expect(r.error?.message).toContain('may have been missed');
      // A filter made now is served normally.
      const fresh = await result(later.url, 'eth_newPendingTransactionFilter');
      const sent = await send(1);
      expect(await collect(fresh, [later.url], 1)).toEqual(sent.map((h) => h.toLowerCase()));
    } finally {
      await later.stop();
    }
  });
});
