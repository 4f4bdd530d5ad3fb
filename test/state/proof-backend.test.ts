import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/common/metrics.js';
import { RpcError } from '../../src/common/errors.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { createProofBackend } from '../../src/state/proof-backend.js';
import { WorldState } from '../../src/state/state.js';
import { verifyStateProof } from '../../src/state/verify.js';

const A = '0x00000000000000000000000000000000000000a1';

async function setup(finalized: bigint | undefined, head = 10n) {
  const world = new WorldState(new MemoryStore());
  for (let n = 0n; n <= head; n++)
    await world.applyBlock({ number: n, hash: `0x${n}`, parentHash: '0x' }, [
      { address: A, deleted: false, balance: n + 1n, storage: new Map() },
    ]);
  const backend = createProofBackend(world, {
    latestFinalized: () => finalized,
    ingestedHead: () => head,
    retainedFinalizedBlocks: 4,
    metrics: createMetrics({ defaultMetrics: false }),
  });
  return { world, backend };
}

const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as RpcError,
  );

describe('svc_getProof backend', () => {
  it('behavior: "finalized" and any retained finalized block are served and verify against that block\'s root', async () => {
    const { world, backend } = await setup(8n);
    for (const block of ['finalized', 5n, 8n] as const) {
      const p = await backend.getProof(A, [], block);
      const root = (await world.rootAt(block === 'finalized' ? 8n : block))!;
      expect(verifyStateProof(root, p)).toMatchObject({
        ok: true,
        account: { balance: (block === 'finalized' ? 8n : block) + 1n },
      });
    }
  });

  it('error: a block above the latest finalized one is refused with -32000 naming it', async () => {
    const { backend } = await setup(8n);
    const err = await rejection(backend.getProof(A, [], 9n));
    expect(err).toBeInstanceOf(RpcError);
    expect({ code: err!.code, message: err!.message, data: err!.data }).toEqual({
      code: -32000,
      message: 'block 9 is not finalized on L1; the latest finalized block is 8',
      data: { requestedBlock: '0x9', latestFinalizedBlock: '0x8' },
    });
  });

  it('error: a finalized block below the retained window is refused with -32001', async () => {
    const { backend } = await setup(8n);
    const err = await rejection(backend.getProof(A, [], 4n));
    expect({ code: err!.code, message: err!.message, data: err!.data }).toEqual({
      code: -32001,
      message: 'state for block 4 is not retained; the oldest retained block is 5 (the latest finalized block is 8)',
      data: { requestedBlock: '0x4', oldestRetainedBlock: '0x5', latestFinalizedBlock: '0x8' },
    });
  });

  it('error: before L1 has been read, and for a finalized block not applied yet, the error says so', async () => {
    const early = await rejection((await setup(undefined)).backend.getProof(A, [], 'finalized'));
    expect(early!.message).toMatch(/has not read the finalized block from L1 yet/);
    const behind = await rejection((await setup(12n)).backend.getProof(A, [], 11n));
    expect(behind!.message).toBe(
      'block 11 is finalized on L1 but the state manager has only applied blocks up to 10; try again shortly',
    );
  });
});
