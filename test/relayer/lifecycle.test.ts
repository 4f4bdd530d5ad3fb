import { beforeAll, describe, expect, it } from 'vitest';
import { Transaction, id } from 'ethers';
import { useClaimChain, type ClaimChain } from './claim-chain.js';

/**
 * The submission lifecycle on a real anvil with automine off, so claims stay pending until the test
 * mines: fee bumps at the same nonce after MESSAGE_SUBMISSION_TIMEOUT, cancellation after
 * MAX_BUMPS_PER_CYCLE, new cycles, NEEDS_MANUAL_INTERVENTION after MAX_RETRY_CYCLES or
 * MAX_NUMBER_OF_RETRIES, the fee cap, and the MAX_NONCE_DIFF pause.
 */
let c: ClaimChain;
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TIMEOUT = '100';

const fixture = useClaimChain();
beforeAll(() => {
  c = fixture.chain;
});

async function claimedEvents(hash: string): Promise<number> {
  const logs = await c.provider.getLogs({
    address: await c.service.getAddress(),
    topics: [id('MessageClaimed(bytes32)'), hash],
    fromBlock: 0,
  });
  return logs.length;
}

async function mine(): Promise<void> {
  await c.rpc('evm_mine');
}

describe('submission lifecycle', () => {
  it('behavior: a claim without receipt is re-sent at the same nonce with fees bumped by at least 10 %, and the bumped one is mined once', async () => {
    const p = await c.pipeline({ MESSAGE_SUBMISSION_TIMEOUT: TIMEOUT, MAX_BUMPS_PER_CYCLE: '2' });
    const [m] = await c.addMessages(1);
    await c.rpc('evm_setAutomine', [false]);
    try {
      await p.claim();
      const first = await c.row(m!.id);
      expect(first.status).toBe('PENDING');
      const original = Transaction.from(first.claim_tx_raw!);
      const versions = [original];
      for (let bump = 1; bump <= 2; bump++) {
        await wait(Number(TIMEOUT) + 20);
        await p.receipts();
        const r = await c.row(m!.id);
        const tx = Transaction.from(r.claim_tx_raw!);
        const prev = versions.at(-1)!;
        expect([r.status, r.bumps, r.retries, Number(r.claim_tx_nonce), tx.nonce]).toEqual([
          'PENDING',
          bump,
          1 + bump,
          original.nonce,
          original.nonce,
        ]);
        expect(tx.maxFeePerGas! * 10n >= prev.maxFeePerGas! * 11n).toBe(true);
        expect(tx.maxPriorityFeePerGas! * 10n >= prev.maxPriorityFeePerGas! * 11n).toBe(true);
        expect(tx.maxPriorityFeePerGas! > prev.maxPriorityFeePerGas!).toBe(true);
        expect([tx.to, tx.data]).toEqual([original.to, original.data]);
        expect(r.failure_reason).toMatch(new RegExp(`fee bump ${bump} of 2 in cycle 1, nonce ${original.nonce}`));
        versions.push(tx);
      }
      await mine();
      await p.receipts();
      const done = await c.row(m!.id);
      expect(done.status).toBe('CLAIMED_SUCCESS');
      const receipt = (await c.provider.getTransactionReceipt(done.claim_tx_hash!))!;
      expect(receipt.status).toBe(1);
      expect(done.claim_tx_hash).toBe(versions[2]!.hash);
      const mined = (await c.provider.getTransaction(done.claim_tx_hash!))!;
      expect([mined.nonce, mined.maxFeePerGas]).toEqual([original.nonce, versions[2]!.maxFeePerGas]);
      for (const v of versions.slice(0, 2)) expect(await c.provider.getTransactionReceipt(v.hash!)).toBeNull();
      expect(await claimedEvents(m!.message_hash)).toBe(1);
      const text = await c.registry.metrics();
      expect(text).toMatch(/relayer_claim_replacements_total\{direction="L1_TO_L2",kind="bump"\} 2/);
    } finally {
      await c.rpc('evm_setAutomine', [true]);
    }
  });

  it('behavior: after MAX_BUMPS_PER_CYCLE the claim is cancelled (same nonce, zero value, to itself) and a new cycle claims it once', async () => {
    const p = await c.pipeline({
      MESSAGE_SUBMISSION_TIMEOUT: TIMEOUT,
      MAX_BUMPS_PER_CYCLE: '1',
      MAX_RETRY_CYCLES: '2',
    });
    const [m] = await c.addMessages(1);
    await c.rpc('evm_setAutomine', [false]);
    let nonce: number;
    try {
      await p.claim();
      nonce = Number((await c.row(m!.id)).claim_tx_nonce);
      await wait(Number(TIMEOUT) + 20);
      await p.receipts(); // bump 1
      await wait(Number(TIMEOUT) + 20);
      await p.receipts(); // bumps exhausted: cancel
      const r = await c.row(m!.id);
      const cancel = Transaction.from(r.claim_tx_raw!);
      expect([r.status, r.claim_tx_kind, cancel.nonce, cancel.to?.toLowerCase(), cancel.value, cancel.data]).toEqual([
        'PENDING',
        'cancel',
        nonce,
        c.relayerAddress,
        0n,
        '0x',
      ]);
      expect(r.failure_reason).toMatch(new RegExp(`cycle 1 cancelled at nonce ${nonce}`));
      await mine();
      await p.receipts();
      const next = await c.row(m!.id);
      expect([next.status, next.cycles, next.bumps, next.claim_tx_hash]).toEqual(['ANCHORED', 1, 0, null]);
      expect(next.failure_reason).toMatch(/submission cycle 1 of 2 ended, claiming again/);
      expect((await c.provider.getTransactionReceipt(cancel.hash!))!.status).toBe(1);
    } finally {
      await c.rpc('evm_setAutomine', [true]);
    }
    await p.claim();
    await wait(200);
    await p.receipts();
    const done = await c.row(m!.id);
    expect(done.status).toBe('CLAIMED_SUCCESS');
    expect(Number(done.claim_tx_nonce)).toBe(nonce + 1);
    expect(await claimedEvents(m!.message_hash)).toBe(1);
  });

  it('behavior: after MAX_RETRY_CYCLES cancelled cycles the message needs manual intervention, and a stuck message never holds back the others', async () => {
    const p = await c.pipeline({
      MESSAGE_SUBMISSION_TIMEOUT: TIMEOUT,
      MAX_BUMPS_PER_CYCLE: '0',
      MAX_RETRY_CYCLES: '1',
    });
    const [stuck, other] = await c.addMessages(2);
    await c.setStatus(other!.id, 'SENT');
    await c.rpc('evm_setAutomine', [false]);
    try {
      await p.claim();
      expect((await c.row(stuck!.id)).status).toBe('PENDING');
      // Another message becomes claimable while the first is stuck: it is claimed in the next iteration.
      await c.setStatus(other!.id, 'ANCHORED');
      await p.claim();
      const o = await c.row(other!.id);
      expect(o.status).toBe('PENDING');
      expect(Number(o.claim_tx_nonce)).toBe(Number((await c.row(stuck!.id)).claim_tx_nonce) + 1);
      await wait(Number(TIMEOUT) + 20);
      await p.receipts(); // no bumps allowed: both are cancelled
      expect((await c.row(stuck!.id)).claim_tx_kind).toBe('cancel');
      await mine();
      await p.receipts();
      const r = await c.row(stuck!.id);
      expect(r.status).toBe('NEEDS_MANUAL_INTERVENTION');
      expect(r.failure_reason).toMatch(/MAX_RETRY_CYCLES \(1\) reached/);
      expect(await claimedEvents(stuck!.message_hash)).toBe(0);
    } finally {
      await c.rpc('evm_setAutomine', [true]);
    }
  });

  it('behavior: when a claim is lost, only the lowest unmined nonce is bumped; the claims queued behind it keep their transactions and are mined once it is', async () => {
    const p = await c.pipeline({ MESSAGE_SUBMISSION_TIMEOUT: TIMEOUT, MAX_BUMPS_PER_CYCLE: '3' });
    const ms = await c.addMessages(3);
    await c.rpc('evm_setAutomine', [false]);
    try {
      await p.claim();
      const before = await Promise.all(ms.map((m) => c.row(m.id)));
      const nonces = before.map((r) => Number(r.claim_tx_nonce));
      expect(nonces).toEqual([nonces[0]!, nonces[0]! + 1, nonces[0]! + 2]);
      // The node loses the first claim: the other two wait behind its nonce.
      // anvil drops the transactions that follow a dropped one too; a real node keeps them queued, as here.
      await c.rpc('anvil_dropTransaction', [before[0]!.claim_tx_hash]);
      for (const r of before.slice(1)) await c.rpc('eth_sendRawTransaction', [r.claim_tx_raw]);
      expect(await c.rpc('txpool_status')).toEqual({ pending: '0x0', queued: '0x2' });
      await wait(Number(TIMEOUT) + 20);
      await p.receipts();
      const after = await Promise.all(ms.map((m) => c.row(m.id)));
      expect(after.map((r) => r.bumps)).toEqual([1, 0, 0]);
      expect(after[0]!.claim_tx_hash).not.toBe(before[0]!.claim_tx_hash);
      expect(after.slice(1).map((r) => r.claim_tx_hash)).toEqual(before.slice(1).map((r) => r.claim_tx_hash));
      await mine();
      await p.receipts();
      const done = await Promise.all(ms.map((m) => c.row(m.id)));
      expect(done.map((r) => r.status)).toEqual(['CLAIMED_SUCCESS', 'CLAIMED_SUCCESS', 'CLAIMED_SUCCESS']);
      for (const m of ms) expect(await claimedEvents(m.message_hash)).toBe(1);
    } finally {
      await c.rpc('evm_setAutomine', [true]);
    }
  });

  it('behavior: MAX_NUMBER_OF_RETRIES bounds submissions: the cycle is cancelled and the message needs manual intervention', async () => {
    const p = await c.pipeline({
      MESSAGE_SUBMISSION_TIMEOUT: TIMEOUT,
      MAX_BUMPS_PER_CYCLE: '5',
      MAX_RETRY_CYCLES: '5',
      MAX_NUMBER_OF_RETRIES: '2',
    });
    const [m] = await c.addMessages(1);
    await c.rpc('evm_setAutomine', [false]);
    try {
      await p.claim(); // submission 1
      await wait(Number(TIMEOUT) + 20);
      await p.receipts(); // submission 2 (bump)
      await wait(Number(TIMEOUT) + 20);
      await p.receipts(); // no submission left: cancel
      const r = await c.row(m!.id);
      expect([r.retries, r.bumps, r.claim_tx_kind]).toEqual([2, 1, 'cancel']);
      await mine();
      await p.receipts();
      const done = await c.row(m!.id);
      expect(done.status).toBe('NEEDS_MANUAL_INTERVENTION');
      expect(done.failure_reason).toMatch(/MAX_NUMBER_OF_RETRIES \(2\) reached/);
    } finally {
      await c.rpc('evm_setAutomine', [true]);
    }
  });
});

const gwei = (n: number) => BigInt(n) * 1_000_000_000n;
const hex = (n: bigint) => `0x${n.toString(16)}`;

describe('fee cap and gas limit', () => {
  async function setBaseFee(fee: bigint): Promise<void> {
    await c.rpc('anvil_setNextBlockBaseFeePerGas', [hex(fee)]);
    await c.rpc('evm_mine');
  }

  it('behavior: with L2_MAX_GAS_FEE_ENFORCED no claim is sent while the fee is above MAX_FEE_PER_GAS_CAP; it is claimed once the fee falls', async () => {
    const p = await c.pipeline({
      L2_MAX_GAS_FEE_ENFORCED: 'true',
      MAX_FEE_PER_GAS_CAP: gwei(5).toString(),
      RETRY_DELAY_IN_SECONDS: '1',
    });
    const [m] = await c.addMessages(1);
    await setBaseFee(gwei(50));
    const nonceBefore = await c.provider.getTransactionCount(c.relayerAddress, 'pending');
    for (let i = 0; i < 2; i++) {
      await c.rpc('anvil_setNextBlockBaseFeePerGas', [hex(gwei(50))]);
      await c.db(m!.id, { retry_after: null });
      await p.claim();
      const r = await c.row(m!.id);
      expect(r.status).toBe('FEE_UNDERPRICED');
      expect(r.failure_reason).toMatch(
        /^estimated max fee per gas \d+ wei above MAX_FEE_PER_GAS_CAP 5000000000 \(L2_MAX_GAS_FEE_ENFORCED\)$/,
      );
      expect(r.retry_after).not.toBeNull();
      expect(r.claim_tx_hash).toBeNull();
    }
    expect(await c.provider.getTransactionCount(c.relayerAddress, 'pending')).toBe(nonceBefore);
    // The base fee falls; once RETRY_DELAY_IN_SECONDS passed the message is claimed.
    await setBaseFee(gwei(1));
    await p.claim();
    expect((await c.row(m!.id)).status).toBe('FEE_UNDERPRICED');
    await wait(1_100);
    await p.claim();
    await wait(100);
    await p.receipts();
    const done = await c.row(m!.id);
    expect(done.status).toBe('CLAIMED_SUCCESS');
    expect(BigInt(done.claim_max_fee_per_gas!) <= gwei(5)).toBe(true);
    expect(await claimedEvents(m!.message_hash)).toBe(1);
  });

  it('behavior: without enforcement every claim is capped at MAX_FEE_PER_GAS_CAP', async () => {
    const cap = gwei(3);
    const p = await c.pipeline({ MAX_FEE_PER_GAS_CAP: cap.toString() });
    const [m] = await c.addMessages(1);
    await setBaseFee(gwei(2)); // 2 × base fee + tip > cap
    await c.rpc('anvil_setNextBlockBaseFeePerGas', [hex(gwei(2))]);
    await p.claim();
    await wait(100);
    await p.receipts();
    const done = await c.row(m!.id);
    expect(done.status).toBe('CLAIMED_SUCCESS');
    expect(BigInt(done.claim_max_fee_per_gas!)).toBe(cap);
    expect(BigInt(done.claim_max_priority_fee_per_gas!) <= cap).toBe(true);
    await setBaseFee(gwei(1));
  });

  it('behavior: a claim needing more gas than MAX_CLAIM_GAS_LIMIT is NON_EXECUTABLE and never sent', async () => {
    const p = await c.pipeline({ MAX_CLAIM_GAS_LIMIT: '30000' });
    const [m] = await c.addMessages(1);
    const nonceBefore = await c.provider.getTransactionCount(c.relayerAddress, 'pending');
    await p.claim();
    const r = await c.row(m!.id);
    expect(r.status).toBe('NON_EXECUTABLE');
    expect(r.failure_reason).toMatch(/^claim needs \d+ gas, above MAX_CLAIM_GAS_LIMIT 30000$/);
    expect(await c.provider.getTransactionCount(c.relayerAddress, 'pending')).toBe(nonceBefore);
  });
});

describe('nonces', () => {
  it('behavior: claiming pauses with a log line and a metric while the database nonce is more than MAX_NONCE_DIFF ahead; stale leases are reclaimed', async () => {
    const p = await c.pipeline({ MAX_NONCE_DIFF: '2' });
    const [m, holder] = await c.addMessages(2);
    const onChain = await c.provider.getTransactionCount(c.relayerAddress, 'pending');
    // A claim recorded at nonce onChain + 4 (e.g. by an instance whose broadcasts never arrived) holds the lease.
    await c.db(holder!.id, {
      status: 'PENDING',
      claim_tx_nonce: String(onChain + 4),
      claim_tx_hash: `0x${'ee'.repeat(32)}`,
      claim_tx_raw: '0x00',
    });
    await c.setNextNonce(onChain + 5);
    const lines = c.logLines.length;
    await p.claim();
    await p.claim();
    expect((await c.row(m!.id)).status).toBe('ANCHORED');
    expect(await c.provider.getTransactionCount(c.relayerAddress, 'pending')).toBe(onChain);
    const paused = c.logLines.slice(lines).filter((l) => l.includes('claiming paused'));
    expect(paused).toHaveLength(1); // once per pause, not per iteration
    expect(JSON.parse(paused[0]!).msg).toBe(
      `claiming paused: the database nonce ${onChain + 5} is 5 ahead of the chain's ${onChain} for ${c.relayerAddress}, more than MAX_NONCE_DIFF (2); claiming resumes when the chain catches up`,
    );
    expect(await c.registry.metrics()).toContain(
      `relayer_claiming_paused{direction="L1_TO_L2",signer="${c.relayerAddress}"} 1`,
    );

    // The holder is resolved (no live transaction): its lease and the ones above it are stale.
    await c.db(holder!.id, { status: 'CLAIMED_REVERTED' });
    await p.claim();
    const r = await c.row(m!.id);
    expect([r.status, Number(r.claim_tx_nonce)]).toEqual(['PENDING', onChain]);
    expect(c.logLines.slice(lines).some((l) => l.includes('stale nonce leases reclaimed'))).toBe(true);
    expect(c.logLines.slice(lines).some((l) => l.includes('claiming resumed'))).toBe(true);
    expect(await c.registry.metrics()).toContain(
      `relayer_claiming_paused{direction="L1_TO_L2",signer="${c.relayerAddress}"} 0`,
    );
    // Automine answers a send before it has mined it: receipts until the claim leaves PENDING (bounded).
    for (let i = 0; i < 50 && (await c.row(m!.id)).status === 'PENDING'; i++) {
      await p.receipts();
      await wait(50);
    }
    expect((await c.row(m!.id)).status).toBe('CLAIMED_SUCCESS');
  });
});
