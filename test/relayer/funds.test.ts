import { beforeAll, describe, expect, it } from 'vitest';
import { parseEther } from 'ethers';
import { useClaimChain, type ClaimChain } from './claim-chain.js';
import { classifyBroadcastError } from '../../src/relayer/broadcast-errors.js';

/**
 * Claims the node refuses (a drained signer, a fee under the base fee) on a real anvil, one iteration at a
 * time: they use up no retry, count as no sent claim, and lack of funds pauses the direction with one log
 * line on entering and one on leaving, resuming by itself once funded.
 */
let c: ClaimChain;
const fixture = useClaimChain();
beforeAll(() => {
  c = fixture.chain;
});

const hex = (n: bigint) => `0x${n.toString(16)}`;
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('broadcast refusals', () => {
  it('args: refusals are told apart from answers that may hide an accepted transaction', () => {
    expect(
      classifyBroadcastError({
        code: 'INSUFFICIENT_FUNDS',
        message: 'insufficient funds for intrinsic transaction cost',
      }),
    ).toEqual({ refused: true, insufficientFunds: true });
    expect(
      classifyBroadcastError({
        code: 'UNKNOWN_ERROR',
        message: 'could not coalesce error',
        error: { code: -32003, message: 'max fee per gas less than block base fee' },
      }),
    ).toEqual({ refused: true, insufficientFunds: false });
    expect(
      classifyBroadcastError({
        code: 'UNKNOWN_ERROR',
        message: 'x',
        error: { code: -32000, message: 'nonce too high' },
      }).refused,
    ).toBe(true);
    expect(
      classifyBroadcastError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))
        .refused,
    ).toBe(true);
    expect(classifyBroadcastError({ code: 'TIMEOUT', message: 'request timeout' }).refused).toBe(false);
    expect(classifyBroadcastError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })).refused).toBe(
      false,
    );
    expect(classifyBroadcastError({ code: 'SERVER_ERROR', message: 'server response 502 Bad Gateway' }).refused).toBe(
      false,
    );
  });

  it('behavior: a claim priced under the base fee is refused by the node: no retry used, no claim counted, message back in ANCHORED', async () => {
    const p = await c.pipeline({ MAX_FEE_PER_GAS_CAP: '1', MAX_NUMBER_OF_RETRIES: '2' });
    const [m] = await c.addMessages(1);
    const nonce = await c.provider.getTransactionCount(c.relayerAddress, 'pending');
    for (let i = 0; i < 4; i++) await p.claim().catch(() => undefined);
    const r = await c.row(m!.id);
    expect([r.status, r.retries, r.claim_tx_hash]).toEqual(['ANCHORED', 0, null]);
    expect(r.failure_reason).toMatch(/^claim transaction refused by the node: /);
    expect(await c.provider.getTransactionCount(c.relayerAddress, 'pending')).toBe(nonce);
    expect(
      sample(
        await c.registry.metrics(),
        'relayer_claims_sent_total',
        `direction="L1_TO_L2",sponsored="false",signer="${c.relayerAddress}"`,
      ) ?? 0,
    ).toBe(0);
    // Fees back to normal: the same message is claimed.
    await c.db(m!.id, { status: 'CLAIMED_SUCCESS' });
  });
});

describe('drained signer', () => {
  it('behavior: with no balance nothing is signed, no retry is used and claiming pauses (logged once, readiness detail, gauge); funded again, every message is claimed once and the end is logged once', async () => {
    const p = await c.pipeline({ MAX_NUMBER_OF_RETRIES: '1' });
    const before =
      sample(
        await c.registry.metrics(),
        'relayer_claims_sent_total',
        `direction="L1_TO_L2",sponsored="false",signer="${c.relayerAddress}"`,
      ) ?? 0;
    const lines = c.logLines.length;
    const funded = await c.provider.getBalance(c.relayerAddress);
    await c.rpc('anvil_setBalance', [c.relayerAddress, '0x0']);
    const rows = await c.addMessages(5);
    const nonce = await c.provider.getTransactionCount(c.relayerAddress, 'pending');
    for (let i = 0; i < 4; i++) await p.claim();
    for (const r of await Promise.all(rows.map((m) => c.row(m.id))))
      expect([r.status, r.retries]).toEqual(['ANCHORED', 0]);
    expect(await c.provider.getTransactionCount(c.relayerAddress, 'pending')).toBe(nonce);
    const metrics = await c.registry.metrics();
    expect(
      sample(metrics, 'relayer_signer_balance_wei', `direction="L1_TO_L2",chain="L2",signer="${c.relayerAddress}"`),
    ).toBe(0);
    expect(sample(metrics, 'relayer_claiming_paused_funds', `direction="L1_TO_L2",signer="${c.relayerAddress}"`)).toBe(
      1,
    );
    const paused = c.logLines.slice(lines).filter((l) => l.includes('claiming paused'));
    expect(paused).toHaveLength(1);
    expect(JSON.parse(paused[0]!).msg).toMatch(
      new RegExp(
        `^claiming paused: signer ${c.relayerAddress} balance 0 wei cannot pay the next claim \\(needs \\d+ wei: gas limit \\d+ x max fee per gas \\d+\\)$`,
      ),
    );

    await c.rpc('anvil_setBalance', [c.relayerAddress, hex(funded > parseEther('1') ? funded : parseEther('1'))]);
    await p.claim();
    for (let i = 0; i < 50; i++) {
      await p.receipts();
      if ((await Promise.all(rows.map((m) => c.row(m.id)))).every((r) => r.status === 'CLAIMED_SUCCESS')) break;
      await wait(100);
    }
    const after = await Promise.all(rows.map((m) => c.row(m.id)));
    expect(after.map((r) => [r.status, r.retries])).toEqual(rows.map(() => ['CLAIMED_SUCCESS', 1]));
    const accepted = (await c.provider.getTransactionCount(c.relayerAddress, 'latest')) - nonce;
    expect(accepted).toBe(5);
    const text = await c.registry.metrics();
    expect(
      (sample(
        text,
        'relayer_claims_sent_total',
        `direction="L1_TO_L2",sponsored="false",signer="${c.relayerAddress}"`,
      ) ?? 0) - before,
    ).toBe(accepted);
    expect(sample(text, 'relayer_claiming_paused_funds', `direction="L1_TO_L2",signer="${c.relayerAddress}"`)).toBe(0);
    const own = c.logLines.slice(lines);
    expect(own.filter((l) => l.includes('claiming paused'))).toHaveLength(1);
    expect(own.filter((l) => l.includes('claiming resumed'))).toHaveLength(1);
    expect(own.filter((l) => l.includes('claim broadcast failed'))).toHaveLength(0);
  });

  it('behavior: below *_SIGNER_MIN_BALANCE_WEI claiming pauses before any gas estimate, naming the variable', async () => {
    const p = await c.pipeline({ L2_SIGNER_MIN_BALANCE_WEI: parseEther('100000').toString() });
    const lines = c.logLines.length;
    const [m] = await c.addMessages(1);
    await p.claim();
    await p.claim();
    expect((await c.row(m!.id)).status).toBe('ANCHORED');
    const paused = c.logLines.slice(lines).filter((l) => l.includes('claiming paused'));
    expect(paused).toHaveLength(1);
    expect(JSON.parse(paused[0]!).msg).toMatch(
      /is below L2_SIGNER_MIN_BALANCE_WEI \(100000000000000000000000 wei\); claiming paused until it is funded$/,
    );
    await c.db(m!.id, { status: 'CLAIMED_SUCCESS' });
  });
});
