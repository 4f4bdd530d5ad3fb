import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Transaction, Wallet, id, parseEther } from 'ethers';
import { useClaimChain, type ClaimChain } from './claim-chain.js';
import { startTxProxy } from './tx-proxy.js';
import type { MessageRow } from '../../src/relayer/db/repository.js';

/**
 * Several signer keys for one direction (L2_SIGNER_PRIVATE_KEYS), on a real anvil and the test database:
 * claims spread over the keys, each key leases its own nonces, and each claim row records the key that
 * signed it, so receipts, fee bumps and rebroadcasts use that key. A JSON-RPC proxy between the relayer and
 * the node swallows every transaction of one key (answers with its hash, never forwards it), so that key's
 * nonce stands still: the other keys go on claiming, and once the proxy lets the key through again every
 * message is claimed exactly once.
 */
let c: ClaimChain;
const fixture = useClaimChain();
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TIMEOUT_MS = 400;

/** A JSON-RPC proxy in front of `upstream` that swallows the transactions sent by `swallowed` while it is set. */
async function startSwallowingProxy(
  upstream: string,
): Promise<{ url: string; swallowed: Set<string>; count: () => number; close: () => Promise<void> }> {
  const swallowed = new Set<string>();
  let count = 0;
  const proxy = await startTxProxy(upstream, (tx) => {
    if (!swallowed.has(tx.from!.toLowerCase())) return false;
    count++;
    return true;
  });
  return { url: proxy.url, swallowed, count: () => count, close: proxy.close };
}

let proxy: Awaited<ReturnType<typeof startSwallowingProxy>>;
const extra = [Wallet.createRandom(), Wallet.createRandom()];
const addresses = () => [c.relayerAddress, ...extra.map((w) => w.address.toLowerCase())];

beforeAll(async () => {
  c = fixture.chain;
  for (const w of extra) await c.rpc('anvil_setBalance', [w.address, `0x${parseEther('100').toString(16)}`]);
  proxy = await startSwallowingProxy(c.anvil.url);
});
afterAll(async () => {
  await proxy?.close();
});

async function claimedEvents(hash: string): Promise<{ count: number; from: string[] }> {
  const logs = await c.provider.getLogs({
    address: await c.service.getAddress(),
    topics: [id('MessageClaimed(bytes32)'), hash],
    fromBlock: 0,
  });
  const from = await Promise.all(
    logs.map(async (l) => (await c.provider.getTransaction(l.transactionHash))!.from.toLowerCase()),
  );
  return { count: logs.length, from };
}

const rows = (ms: MessageRow[]) => Promise.all(ms.map((m) => c.row(m.id)));

describe('several signer keys per direction', () => {
  it('behavior: claims spread over the keys, each with its own nonce sequence, and each row records the key that signed it', async () => {
    const p = await c.pipeline({ L2_SIGNER_PRIVATE_KEYS: extra.map((w) => w.privateKey).join(',') });
    const nonces = await Promise.all(addresses().map((a) => c.provider.getTransactionCount(a, 'latest')));
    const ms = await c.addMessages(9);
    await p.claim();
    // anvil mines a sent transaction just after answering its hash: on a loaded machine one receipt pass can come
    // before a block, so passes repeat (each a real iteration of the loop) until no claim is pending, up to 20 s.
    let done = await rows(ms);
    for (
      const until = Date.now() + 20_000;
      done.some((r) => r.status === 'PENDING') && Date.now() < until;
      done = await rows(ms)
    ) {
      await p.receipts();
      if ((await rows(ms)).some((r) => r.status === 'PENDING')) await wait(100);
    }
    expect(done.map((r) => r.status)).toEqual(ms.map(() => 'CLAIMED_SUCCESS'));
    // Three claims per key, at that key's consecutive nonces.
    for (const [i, a] of addresses().entries()) {
      const mine = done.filter((r) => r.claim_signer === a);
      expect(mine.map((r) => Number(r.claim_tx_nonce)).sort((x, y) => x - y)).toEqual(
        [0, 1, 2].map((k) => nonces[i]! + k),
      );
    }
    for (const r of done) {
      const tx = (await c.provider.getTransaction(r.claim_tx_hash!))!;
      expect([tx.from.toLowerCase(), tx.nonce]).toEqual([r.claim_signer, Number(r.claim_tx_nonce)]);
      expect(await claimedEvents(r.message_hash)).toEqual({ count: 1, from: [r.claim_signer] });
    }
    const text = await c.registry.metrics();
    for (const a of addresses()) {
      expect(text).toContain(`relayer_signer_balance_wei{direction="L1_TO_L2",chain="L2",signer="${a}"}`);
      expect(text).toMatch(
        new RegExp(`relayer_claims_sent_total\\{direction="L1_TO_L2",sponsored="false",signer="${a}"\\} [1-9]`),
      );
    }
  });

  it(
    'behavior: a key whose transactions never reach the node holds none of the others; once it gets through, every message is claimed exactly once, the stuck ones by their own key',
    { timeout: 120_000 },
    async () => {
      const overrides = {
        L2_RPC_URL: proxy.url,
        L2_SIGNER_PRIVATE_KEYS: extra.map((w) => w.privateKey).join(','),
        MESSAGE_SUBMISSION_TIMEOUT: String(TIMEOUT_MS),
        MAX_BUMPS_PER_CYCLE: '1000',
        MAX_NUMBER_OF_RETRIES: '1000',
      };
      const p = await c.pipeline(overrides);
      const stuck = extra[0]!.address.toLowerCase();
      const stuckNonce = await c.provider.getTransactionCount(stuck, 'latest');
      proxy.swallowed.add(stuck);
      const first = await c.addMessages(6);
      await p.claim();
      await p.receipts();
      const before = await rows(first);
      const held = before.filter((r) => r.claim_signer === stuck);
      expect(held).toHaveLength(2);
      expect(held.map((r) => r.status)).toEqual(['PENDING', 'PENDING']);
      expect(before.filter((r) => r.claim_signer !== stuck).map((r) => r.status)).toEqual(
        [0, 1, 2, 3].map(() => 'CLAIMED_SUCCESS'),
      );

      // The stuck key's nonce stands still past MESSAGE_SUBMISSION_TIMEOUT (its fee bumps are swallowed too).
      await wait(TIMEOUT_MS + 100);
      await p.receipts();
      await wait(TIMEOUT_MS + 100);
      await p.receipts();
      expect(proxy.count()).toBeGreaterThanOrEqual(3);
      const bumped = await rows(held);
      expect(bumped.every((r) => r.status === 'PENDING' && r.claim_signer === stuck)).toBe(true);
      expect(bumped.some((r) => r.bumps > 0)).toBe(true);

      // New messages go to the keys that move, and are claimed while the stuck key still has claims waiting.
      const second = await c.addMessages(6);
      await p.claim();
      await p.receipts();
      const during = await rows(second);
      expect(during.map((r) => r.claim_signer === stuck)).toEqual(second.map(() => false));
      expect(during.map((r) => r.status)).toEqual(second.map(() => 'CLAIMED_SUCCESS'));
      expect(await c.provider.getTransactionCount(stuck, 'latest')).toBe(stuckNonce);
      expect((await rows(held)).map((r) => r.status)).toEqual(['PENDING', 'PENDING']);

      // The key gets through again: its own claims (bumped or rebroadcast at their nonces) are mined.
      proxy.swallowed.clear();
      const all = [...first, ...second];
      const deadline = Date.now() + 90_000;
      let now = await rows(all);
      while (now.some((r) => r.status !== 'CLAIMED_SUCCESS') && Date.now() < deadline) {
        await wait(200);
        await p.claim();
        await p.receipts();
        now = await rows(all);
      }
      expect(now.map((r) => r.status)).toEqual(all.map(() => 'CLAIMED_SUCCESS'));
      for (const r of now) expect(await claimedEvents(r.message_hash)).toEqual({ count: 1, from: [r.claim_signer] });
      const resolved = await rows(held);
      expect(resolved.map((r) => r.claim_signer)).toEqual([stuck, stuck]);
      expect(await c.provider.getTransactionCount(stuck, 'latest')).toBe(stuckNonce + 2);
    },
  );

  it('behavior: a PENDING row from before claim_signer was recorded (null) belongs to the primary key: with extra keys configured, it is bumped by the primary key and claimed once', async () => {
    const single = await c.pipeline({ MESSAGE_SUBMISSION_TIMEOUT: String(TIMEOUT_MS) });
    const [m] = await c.addMessages(1);
    await c.rpc('evm_setAutomine', [false]);
    try {
      await single.claim();
      const sent = await c.row(m!.id);
      expect([sent.status, sent.claim_signer]).toEqual(['PENDING', c.relayerAddress]);
      await c.db(m!.id, { claim_signer: null });
      const p = await c.pipeline({
        L2_SIGNER_PRIVATE_KEYS: extra.map((w) => w.privateKey).join(','),
        MESSAGE_SUBMISSION_TIMEOUT: String(TIMEOUT_MS),
      });
      await wait(TIMEOUT_MS + 100);
      await p.receipts();
      const r = await c.row(m!.id);
      expect([r.status, r.bumps, r.claim_tx_nonce]).toEqual(['PENDING', 1, sent.claim_tx_nonce]);
      const bump = Transaction.from(r.claim_tx_raw!);
      expect([bump.from!.toLowerCase(), bump.nonce]).toEqual([c.relayerAddress, Number(sent.claim_tx_nonce)]);
      await c.rpc('evm_mine');
      await p.receipts();
      expect((await c.row(m!.id)).status).toBe('CLAIMED_SUCCESS');
      expect(await claimedEvents(m!.message_hash)).toEqual({ count: 1, from: [c.relayerAddress] });
    } finally {
      await c.rpc('evm_setAutomine', [true]);
    }
  });
});
