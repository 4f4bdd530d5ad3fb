import { beforeAll, describe, expect, it } from 'vitest';
import { useClaimChain, type ClaimChain } from './claim-chain.js';
import { createResimulationProcessor } from '../../src/relayer/pipeline/resimulation.js';
import { createStuckWatcher } from '../../src/relayer/pipeline/stuck.js';

/**
 * What operators see on a real anvil: the history of a claim's life (claim transaction, signer and actor on each
 * line), NON_EXECUTABLE re-simulated until the destination accepts the claim, and stuck messages in the gauge
 * and the log.
 */
let c: ClaimChain;
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fixture = useClaimChain();
beforeAll(() => {
  c = fixture.chain;
});

async function settle(p: { receipts: () => Promise<boolean> }, id: string): Promise<string> {
  for (let i = 0; i < 50; i++) {
    await p.receipts();
    const s = (await c.row(id)).status;
    if (s !== 'PENDING') return s;
    await wait(100);
  }
  return (await c.row(id)).status;
}

const past = () => new Date(Date.now() - 1_000);

describe('history', () => {
  it("behavior: a claim's life is one line per move, with the claim transaction, its nonce and signer, and this instance as actor", async () => {
    const p = await c.pipeline();
    const [m] = await c.addMessages(1);
    await p.claim();
    expect(await settle(p, m!.id)).toBe('CLAIMED_SUCCESS');
    const row = await c.row(m!.id);
    const lines = (await c.repo.history([m!.id])).get(m!.id)!;
    const tx = {
      claim_tx_hash: row.claim_tx_hash,
      claim_tx_nonce: row.claim_tx_nonce,
      signer: c.relayerAddress,
      actor: c.repo.actor,
    };
    expect(
      lines.map(({ from_status, status, claim_tx_hash, claim_tx_nonce, signer, actor }) => ({
        from_status,
        status,
        claim_tx_hash,
        claim_tx_nonce,
        signer,
        actor,
      })),
    ).toEqual([
      {
        from_status: null,
        status: 'SENT',
        claim_tx_hash: null,
        claim_tx_nonce: null,
        signer: null,
        actor: c.repo.actor,
      },
      { from_status: 'ANCHORED', status: 'PENDING', ...tx },
      { from_status: 'PENDING', status: 'CLAIMED_SUCCESS', ...tx },
    ]);
    expect(row.claim_tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
  });
});

describe('NON_EXECUTABLE re-simulation', () => {
  it('behavior: a claim that reverts is re-simulated on a doubling backoff, at most the cap per iteration, and claimed once the destination accepts it', async () => {
    const p = await c.pipeline({ RELAYER_RESIMULATE_DELAY_SECONDS: '1', RELAYER_RESIMULATE_PER_ITERATION: '1' });
    // Stored ANCHORED but not yet anchored on L2: the claim reverts until anchorPending().
    const [a, b] = await c.addMessages(2, undefined, { anchor: false });
    await p.claim();
    for (const m of [a!, b!]) {
      const r = await c.row(m.id);
      expect([r.status, r.resimulations, r.retry_after !== null]).toEqual(['NON_EXECUTABLE', 0, true]);
      expect(r.failure_reason).toMatch(/^claim reverts in gas estimation/);
    }
    const resimulate = createResimulationProcessor(p.ctx);
    await resimulate(); // not due yet (1 s)
    expect([(await c.row(a!.id)).resimulations, (await c.row(b!.id)).resimulations]).toEqual([0, 0]);
    for (const m of [a!, b!]) await c.db(m.id, { retry_after: past() });
    await resimulate(); // due: both, but one per iteration
    const counts = [(await c.row(a!.id)).resimulations, (await c.row(b!.id)).resimulations];
    expect(counts.sort()).toEqual([0, 1]);
    await resimulate();
    const once = await c.row(a!.id);
    expect([once.status, once.resimulations]).toEqual(['NON_EXECUTABLE', 1]);
    expect(once.failure_reason).toMatch(/\(re-simulated 1 time; next in 2 s\)$/);
    expect(new Date(once.retry_after!).getTime()).toBeGreaterThan(Date.now());

    await c.anchorPending();
    for (const m of [a!, b!]) await c.db(m.id, { retry_after: past() });
    await resimulate();
    await resimulate();
    for (const m of [a!, b!])
      expect([(await c.row(m.id)).status, (await c.row(m.id)).resimulations]).toEqual(['ANCHORED', 0]);
    await p.claim();
    for (const m of [a!, b!]) expect(await settle(p, m.id)).toBe('CLAIMED_SUCCESS');
    const lines = (await c.repo.history([a!.id])).get(a!.id)!.map((h) => `${h.from_status}>${h.status}`);
    expect(lines).toEqual([
      'null>SENT',
      'ANCHORED>NON_EXECUTABLE',
      'NON_EXECUTABLE>ANCHORED',
      'ANCHORED>PENDING',
      'PENDING>CLAIMED_SUCCESS',
    ]);
  });

  it('behavior: with RELAYER_RESIMULATE_NON_EXECUTABLE=false NON_EXECUTABLE stays final (no re-simulation time)', async () => {
    const p = await c.pipeline({ RELAYER_RESIMULATE_NON_EXECUTABLE: 'false' });
    const [m] = await c.addMessages(1, undefined, { anchor: false });
    await p.claim();
    const r = await c.row(m!.id);
    expect([r.status, r.retry_after]).toEqual(['NON_EXECUTABLE', null]);
    await createResimulationProcessor(p.ctx)();
    expect((await c.row(m!.id)).resimulations).toBe(0);
    await c.anchorPending(); // leaves the chain consistent for later tests
  });
});

describe('stuck messages', () => {
  it('behavior: a message claimable longer than RELAYER_STUCK_AFTER_SECONDS counts in relayer_messages_stuck and is logged once; claimed, it leaves the gauge', async () => {
    const p = await c.pipeline();
    const [m] = await c.addMessages(1);
    const gauge = async () =>
      /relayer_messages_stuck\{direction="L1_TO_L2"\} (\d+)/.exec(await c.registry.metrics())?.[1];
    expect(await gauge()).toBe('0');
    await c.db(m!.id, { anchored_at: new Date(Date.now() - 601_000) });
    expect(await gauge()).toBe('1');
    const watch = createStuckWatcher(p.ctx, 600);
    await watch();
    await watch();
    const logged = c.logLines.filter((l) => l.includes(`message ${m!.message_hash} is stuck`));
    expect(logged).toHaveLength(1);
    expect(JSON.parse(logged[0]!)).toMatchObject({ level: 40, status: 'ANCHORED', direction: 'L1_TO_L2' });
    await p.claim();
    expect(await settle(p, m!.id)).toBe('CLAIMED_SUCCESS');
    expect(await gauge()).toBe('0');
  });
});
