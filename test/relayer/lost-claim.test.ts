import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id } from 'ethers';
import { useClaimChain, type ClaimChain } from './claim-chain.js';
import { startTxProxy } from './tx-proxy.js';
import { LOST_CLAIM_GRACE_MS } from '../../src/relayer/pipeline/receipt-plan.js';
import { STRANDED_CLAIM_MS } from '../../src/relayer/pipeline/receipt-plan.js';
import { pooledRpc } from '../../src/common/chain/pool.js';
import type { MessageRow } from '../../src/relayer/db/repository.js';

/**
 * A claim transaction lost on its way to the node (a JSON-RPC proxy answers with its hash and never
 * forwards it), on a real anvil and the test database. The lost claim sits at the signer's lowest unmined
 * nonce, so every later claim of that signer waits behind it. Two fast paths find it: the sender, right after
 * the broadcast, when the node's pending nonce stops at the claim (trigger after_send), and the receipt loop
 * (the lowest nonce looked up after LOST_CLAIM_GRACE_MS, and sent again from its stored bytes when the node
 * never got it; trigger lowest_nonce). To test the second, the proxy loses the sender's resend too.
 * MESSAGE_SUBMISSION_TIMEOUT is two minutes and the general rebroadcast comes after 10 s: only the fast paths
 * claim the messages within the few receipt iterations these tests allow.
 */
let c: ClaimChain;
const fixture = useClaimChain();
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const NO_TIMEOUT = { MESSAGE_SUBMISSION_TIMEOUT: '120000' };
/** Receipt iterations after the grace (100 ms apart): far less than the 10 s of the general rebroadcast. */
const ITERATIONS = 20;

interface LosingProxy {
  url: string;
  /** Loses the next `n` transactions whose (sender, nonce) it has not seen yet. */
  loseNext(n: number): void;
  /** Also loses the next `n` sends of a (sender, nonce) it has seen (a node that drops the resend too). */
  loseResends(n: number): void;
  lost(): number;
  /** eth_sendRawTransaction calls per transaction hash, and calls per method. */
  sends(hash: string): number;
  calls(method: string): number;
  close(): Promise<void>;
}

/**
 * Loses new transactions while armed (answers with the hash, never forwards); a second send of the same
 * sender and nonce goes through, as the drop proxy of the bench does, unless loseResends armed it too.
 */
async function startLosingProxy(upstream: string): Promise<LosingProxy> {
  const seen = new Set<string>();
  const sends = new Map<string, number>();
  let toLose = 0;
  let resendsToLose = 0;
  let lost = 0;
  const proxy = await startTxProxy(upstream, (tx) => {
    sends.set(tx.hash!, (sends.get(tx.hash!) ?? 0) + 1);
    const key = `${tx.from!.toLowerCase()}:${tx.nonce}`;
    const fresh = !seen.has(key);
    seen.add(key);
    if (!fresh) {
      if (resendsToLose === 0) return false;
      resendsToLose--;
      lost++;
      return true;
    }
    if (toLose === 0) return false;
    toLose--;
    lost++;
    return true;
  });
  return {
    ...proxy,
    loseNext: (n) => void (toLose = n),
    loseResends: (n) => void (resendsToLose = n),
    lost: () => lost,
    sends: (hash) => sends.get(hash) ?? 0,
  };
}

let proxy: LosingProxy;
beforeAll(async () => {
  c = fixture.chain;
  proxy = await startLosingProxy(c.anvil.url);
});
afterAll(async () => {
  await proxy?.close();
});

async function claimedEvents(hash: string): Promise<number> {
  const logs = await c.provider.getLogs({
    address: await c.service.getAddress(),
    topics: [id('MessageClaimed(bytes32)'), hash],
    fromBlock: 0,
  });
  return logs.length;
}

/** relayer_claim_rebroadcasts_total and relayer_claim_replacements_total of L1_TO_L2, by trigger / kind. */
async function counted(name: string, label: 'trigger' | 'kind', value: string): Promise<number> {
  const values = (await c.registry.getSingleMetric(name)?.get())?.values ?? [];
  return values
    .filter((v) => v.labels.direction === 'L1_TO_L2' && v.labels[label] === value)
    .reduce((a, v) => a + v.value, 0);
}

const rows = (ms: MessageRow[]) => Promise.all(ms.map((m) => c.row(m.id)));

describe('a claim transaction lost before the node', () => {
  it(
    'behavior: the lost claim at the lowest nonce is sent again from its stored bytes once the node shows it never got it; it and the claims behind it are claimed exactly once, with no fee bump',
    { timeout: 60_000 },
    async () => {
      const p = await c.pipeline({ L2_RPC_URL: proxy.url, ...NO_TIMEOUT });
      const ms = await c.addMessages(3);
      const firstNonce = await c.provider.getTransactionCount(c.relayerAddress, 'latest');
      proxy.loseNext(1);
      proxy.loseResends(1);
      await p.claim();
      const sent = await rows(ms);
      expect(sent.map((r) => [r.status, Number(r.claim_tx_nonce)])).toEqual(
        [0, 1, 2].map((k) => ['PENDING', firstNonce + k]),
      );
      // Lost, and the sender's resend right after the broadcast lost too.
      expect(proxy.lost()).toBe(2);
      expect(await counted('relayer_claim_rebroadcasts_total', 'trigger', 'after_send')).toBe(1);
      // The lowest nonce never reached the node: nothing of the signer is mined, the two later claims wait in its pool.
      expect(await c.provider.getTransaction(sent[0]!.claim_tx_hash!)).toBeNull();
      expect(await c.provider.getTransactionCount(c.relayerAddress, 'latest')).toBe(firstNonce);

      await wait(LOST_CLAIM_GRACE_MS + 100);
      let now = await rows(ms);
      for (let i = 0; i < ITERATIONS && now.some((r) => r.status !== 'CLAIMED_SUCCESS'); i++) {
        await p.receipts();
        now = await rows(ms);
        if (now.some((r) => r.status !== 'CLAIMED_SUCCESS')) await wait(100);
      }
      expect(now.map((r) => r.status)).toEqual(ms.map(() => 'CLAIMED_SUCCESS'));
      // The very transactions first signed: same hashes and nonces, no bump, one submission each.
      expect(now.map((r) => [r.claim_tx_hash, r.claim_tx_nonce, r.bumps, r.retries])).toEqual(
        sent.map((r) => [r.claim_tx_hash, r.claim_tx_nonce, 0, 1]),
      );
      for (const r of now) {
        expect((await c.provider.getTransactionReceipt(r.claim_tx_hash!))?.status).toBe(1);
        expect(await claimedEvents(r.message_hash)).toBe(1);
        // One submission cycle: PENDING once, then claimed (no return to ANCHORED for a new attempt).
        const statuses = (await c.history(r.id)).map((h) => h.status);
        expect(statuses.slice(statuses.indexOf('PENDING'))).toEqual(['PENDING', 'CLAIMED_SUCCESS']);
      }
      // Sent three times (lost, resent by the sender and lost again, then rebroadcast), the later claims once.
      expect(now.map((r) => proxy.sends(r.claim_tx_hash!))).toEqual([3, 1, 1]);
      expect(await counted('relayer_claim_rebroadcasts_total', 'trigger', 'lowest_nonce')).toBe(1);
      expect(await counted('relayer_claim_rebroadcasts_total', 'trigger', 'age')).toBe(0);
      expect(await counted('relayer_claim_replacements_total', 'kind', 'bump')).toBe(0);
      expect(
        c.logLines
          .filter((l) => l.includes('claim transaction unknown to the node'))
          .map((l) => JSON.parse(l) as { tx: string; trigger: string }),
      ).toEqual([expect.objectContaining({ tx: sent[0]!.claim_tx_hash, trigger: 'lowest_nonce' })]);
    },
  );

  it(
    "behavior: several lost claims of one signer are all sent again in the same receipt iteration, each once, the later ones found by the node's pending nonce",
    { timeout: 60_000 },
    async () => {
      const p = await c.pipeline({ L2_RPC_URL: proxy.url, ...NO_TIMEOUT });
      const ms = await c.addMessages(4);
      const before = await counted('relayer_claim_rebroadcasts_total', 'trigger', 'lowest_nonce');
      const lostBefore = proxy.lost();
      proxy.loseNext(2);
      proxy.loseResends(1);
      await p.claim();
      const sent = await rows(ms);
      // Both lost, and the sender's resend of the first (its pending nonce then stands still: it stops there).
      expect(proxy.lost() - lostBefore).toBe(3);
      await wait(LOST_CLAIM_GRACE_MS + 100);
      // One iteration: the lowest, then the next gap.
      await p.receipts();
      expect(await counted('relayer_claim_rebroadcasts_total', 'trigger', 'lowest_nonce')).toBe(before + 2);
      expect(sent.map((r) => proxy.sends(r.claim_tx_hash!))).toEqual([3, 2, 1, 1]);
      let now = await rows(ms);
      for (let i = 0; i < ITERATIONS && now.some((r) => r.status !== 'CLAIMED_SUCCESS'); i++) {
        await p.receipts();
        now = await rows(ms);
        if (now.some((r) => r.status !== 'CLAIMED_SUCCESS')) await wait(100);
      }
      expect(now.map((r) => [r.status, r.claim_tx_hash, r.bumps])).toEqual(
        sent.map((r) => ['CLAIMED_SUCCESS', r.claim_tx_hash, 0]),
      );
      for (const r of now) expect(await claimedEvents(r.message_hash)).toBe(1);
    },
  );

  it(
    'behavior: a claim the node holds but has not mined is not sent again, and its lookup is repeated at most once per grace period',
    { timeout: 60_000 },
    async () => {
      const p = await c.pipeline({ L2_RPC_URL: proxy.url, ...NO_TIMEOUT });
      const [m] = await c.addMessages(1);
      const rebroadcastsBefore = await counted('relayer_claim_rebroadcasts_total', 'trigger', 'lowest_nonce');
      await c.rpc('evm_setAutomine', [false]);
      try {
        await p.claim();
        const sent = await c.row(m!.id);
        expect(sent.status).toBe('PENDING');
        await wait(LOST_CLAIM_GRACE_MS + 100);
        const lookupsBefore = proxy.calls('eth_getTransactionByHash');
        const started = Date.now();
        for (let i = 0; i < 5; i++) await p.receipts();
        const elapsed = Date.now() - started;
        const lookups = proxy.calls('eth_getTransactionByHash') - lookupsBefore;
        // Looked up (the claim is past the grace and holds the lowest nonce), but not on every iteration.
        expect(lookups).toBeGreaterThanOrEqual(1);
        expect(lookups).toBeLessThanOrEqual(1 + Math.floor(elapsed / LOST_CLAIM_GRACE_MS));
        expect(proxy.sends(sent.claim_tx_hash!)).toBe(1);
        expect(await counted('relayer_claim_rebroadcasts_total', 'trigger', 'lowest_nonce')).toBe(rebroadcastsBefore);
        await c.rpc('evm_mine');
        await p.receipts();
        const done = await c.row(m!.id);
        expect([done.status, done.claim_tx_hash, done.bumps]).toEqual(['CLAIMED_SUCCESS', sent.claim_tx_hash, 0]);
        expect(await claimedEvents(m!.message_hash)).toBe(1);
      } finally {
        await c.rpc('evm_setAutomine', [true]);
      }
    },
  );
  it(
    'behavior: claims the node answered for but does not hold are sent again by the sender right after their broadcast, before any receipt iteration, each once, and claimed exactly once',
    { timeout: 60_000 },
    async () => {
      const p = await c.pipeline({ L2_RPC_URL: proxy.url, ...NO_TIMEOUT });
      const ms = await c.addMessages(4);
      const afterSend = await counted('relayer_claim_rebroadcasts_total', 'trigger', 'after_send');
      const lowest = await counted('relayer_claim_rebroadcasts_total', 'trigger', 'lowest_nonce');
      const lostBefore = proxy.lost();
      proxy.loseNext(2);
      await p.claim();
      const sent = await rows(ms);
      expect(proxy.lost() - lostBefore).toBe(2);
      // The two lost claims (the first two nonces) were sent again within the claiming iteration: the node holds
      // every claim now, with no receipt iteration run.
      expect(sent.map((r) => proxy.sends(r.claim_tx_hash!))).toEqual([2, 2, 1, 1]);
      for (const r of sent) expect(await c.provider.getTransaction(r.claim_tx_hash!)).not.toBeNull();
      expect(await counted('relayer_claim_rebroadcasts_total', 'trigger', 'after_send')).toBe(afterSend + 2);
      let now = await rows(ms);
      for (let i = 0; i < ITERATIONS && now.some((r) => r.status !== 'CLAIMED_SUCCESS'); i++) {
        await p.receipts();
        now = await rows(ms);
        if (now.some((r) => r.status !== 'CLAIMED_SUCCESS')) await wait(100);
      }
      expect(now.map((r) => [r.status, r.claim_tx_hash, r.bumps, r.retries])).toEqual(
        sent.map((r) => ['CLAIMED_SUCCESS', r.claim_tx_hash, 0, 1]),
      );
      for (const r of now) expect(await claimedEvents(r.message_hash)).toBe(1);
      expect(await counted('relayer_claim_rebroadcasts_total', 'trigger', 'lowest_nonce')).toBe(lowest);
    },
  );
  it(
    "behavior: a claim the node holds but would not execute (its pending nonce stays at the claim's) is replaced by a fee bump after STRANDED_CLAIM_MS, not at MESSAGE_SUBMISSION_TIMEOUT; one that merely waits for a block is not",
    { timeout: 60_000 },
    async () => {
      // The node's state is made by a proxy that answers the pending nonce with the mined one: anvil was seen in
      // it under load (a re-sent claim known and never mined), but cannot be put in it on purpose.
      let stranding = false;
      const strander = await startTxProxy(
        c.anvil.url,
        () => false,
        (method, params) =>
          stranding && method === 'eth_getTransactionCount' && params[1] === 'pending'
            ? pooledRpc(c.anvil.url, method, [params[0], 'latest'])
            : undefined,
      );
      try {
        const p = await c.pipeline({ L2_RPC_URL: strander.url, ...NO_TIMEOUT });
        const [m] = await c.addMessages(1);
        const bumpsBefore = await counted('relayer_claim_replacements_total', 'kind', 'bump');
        await c.rpc('evm_setAutomine', [false]);
        try {
          await p.claim();
          const sent = await c.row(m!.id);
          expect(sent.status).toBe('PENDING');
          await wait(STRANDED_CLAIM_MS + 200);
          // Unmined, but in the node's pending nonce (executable, waiting for a block): nothing is replaced.
          await p.receipts();
          await wait(LOST_CLAIM_GRACE_MS + 100);
          await p.receipts();
          expect([
            (await c.row(m!.id)).bumps,
            await counted('relayer_claim_replacements_total', 'kind', 'bump'),
          ]).toEqual([0, bumpsBefore]);
          stranding = true;
          await wait(LOST_CLAIM_GRACE_MS + 100);
          await p.receipts();
          const bumped = await c.row(m!.id);
          expect([bumped.status, bumped.bumps, bumped.claim_tx_nonce]).toEqual(['PENDING', 1, sent.claim_tx_nonce]);
          expect(bumped.claim_tx_hash).not.toBe(sent.claim_tx_hash);
          expect(bumped.failure_reason).toMatch(
            /the node holds the claim but its pending nonce stays at \d+ \(it would not execute it\)/,
          );
          expect(await counted('relayer_claim_replacements_total', 'kind', 'bump')).toBe(bumpsBefore + 1);
          stranding = false;
          await c.rpc('evm_mine');
          await p.receipts();
          const done = await c.row(m!.id);
          expect([done.status, done.claim_tx_hash]).toEqual(['CLAIMED_SUCCESS', bumped.claim_tx_hash]);
          expect(await claimedEvents(m!.message_hash)).toBe(1);
        } finally {
          await c.rpc('evm_setAutomine', [true]);
        }
      } finally {
        await strander.close();
      }
    },
  );
});
