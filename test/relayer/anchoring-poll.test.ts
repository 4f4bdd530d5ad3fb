import { describe, expect, it } from 'vitest';
import { parseEther } from 'ethers';
import { createL1L2AnchoringProcessor } from '../../src/relayer/pipeline/l1-to-l2.js';
import { useClaimChain } from './claim-chain.js';

/**
 * L1→L2 anchoring on a real chain: while L2 has not anchored the oldest waiting message, the loop asks L2 about
 * that one only (anchoring follows the L1 message numbers), so waiting for the coordinator costs one eth_call
 * per iteration, not one per waiting message; once it is anchored, the rest are asked in the same iteration.
 */
const fixture = useClaimChain();

describe('L1→L2 anchoring while the coordinator has not anchored yet', () => {
  it('behavior: one status call per iteration while the oldest is unanchored; all five move to ANCHORED in the iteration after the anchoring', async () => {
    const c = fixture.chain;
    const p = await c.pipeline();
    const rows = await c.addMessages(5, parseEther('0.01'), { anchor: false });
    for (const m of rows) await c.setStatus(m.id, 'TRANSACTION_SIZE_COMPUTED');
    const ethCalls = async () =>
      (await c.registry.getSingleMetric('relayer_rpc_calls_total')!.get()).values
        .filter((v) => v.labels.method === 'eth_call')
        .reduce((n, v) => n + v.value, 0);
    const anchoring = createL1L2AnchoringProcessor(p.ctx);

    const before = await ethCalls();
    for (let i = 0; i < 3; i++) await anchoring();
    expect(await ethCalls()).toBe(before + 3);
    for (const m of rows) expect((await c.row(m.id)).status).toBe('TRANSACTION_SIZE_COMPUTED');

    await c.anchorPending();
    const anchoredFrom = await ethCalls();
    await anchoring();
    expect(await ethCalls()).toBe(anchoredFrom + 5);
    for (const m of rows) expect((await c.row(m.id)).status).toBe('ANCHORED');
  });
});
