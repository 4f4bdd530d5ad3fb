import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { newMessage } from './new-message.js';
import { migrate } from '../../src/common/db/migrations.js';
import { createLogger } from '../../src/common/log.js';
import { createMetrics } from '../../src/common/metrics.js';
import { relayerMigrations } from '../../src/relayer/db/migrations.js';
import { RelayerRepository } from '../../src/relayer/db/repository.js';
import type { MessageStatus } from '../../src/relayer/message/status.js';
import { createRelayerMetrics } from '../../src/relayer/metrics.js';
import { runLoop } from '../../src/relayer/pipeline/loop.js';
import { Waker } from '../../src/relayer/pipeline/waker.js';

/**
 * The pipeline's hand-offs (src/relayer/pipeline/waker.ts): a loop paused for its interval runs again as soon as
 * it is woken, a wake during an iteration is not lost, and the repository names the statuses each settled write
 * moved messages into. The loops below pause for a minute: were a wake lost, the test would time out.
 */
const MINUTE = 60_000;
const logger = createLogger({ level: 'silent' });
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let repo: RelayerRepository;
beforeAll(async () => {
  testDb = await openTestDb();
  const schema = testDb.schema('relayer');
  await migrate(testDb.client.knex, schema, relayerMigrations);
  repo = new RelayerRepository(testDb.client, schema);
});
afterAll(async () => {
  await testDb?.close();
});

/** A loop over `waker` whose iterations are counted; `next(n)` resolves once the n-th iteration has run. */
function countedLoop(waker: Waker, signal: AbortSignal, during?: (n: number) => void) {
  let runs = 0;
  const waiting = new Map<number, () => void>();
  const done = runLoop({
    name: 'test',
    direction: 'L1_TO_L2',
    intervalMs: MINUTE,
    signal,
    logger,
    metrics: createRelayerMetrics(createMetrics(), repo),
    waker,
    tick: async () => {
      runs++;
      during?.(runs);
      waiting.get(runs)?.();
      return false;
    },
  });
  return {
    done,
    runs: () => runs,
    next: (n: number) => (runs >= n ? Promise.resolve() : new Promise<void>((resolve) => waiting.set(n, resolve))),
  };
}

describe('pipeline hand-offs (Waker)', () => {
  it('behavior: a loop paused for its interval runs its next iteration as soon as it is woken, and stops at once when aborted', async () => {
    const stop = new AbortController();
    const waker = new Waker();
    const loop = countedLoop(waker, stop.signal);
    await loop.next(1);
    waker.wake();
    await loop.next(2);
    waker.wake();
    await loop.next(3);
    expect(loop.runs()).toBe(3);
    stop.abort();
    await loop.done;
    expect(loop.runs()).toBe(3);
  });

  it('behavior: a wake that comes during an iteration ends the pause after it at once (the hand-off is not lost)', async () => {
    const stop = new AbortController();
    const waker = new Waker();
    const loop = countedLoop(waker, stop.signal, (n) => {
      if (n === 1) waker.wake();
    });
    await loop.next(2);
    stop.abort();
    await loop.done;
    // Only the one wake: after the second iteration the loop pauses for its interval again.
    expect(loop.runs()).toBe(2);
  });
});

describe('RelayerRepository.onEntered', () => {
  it('behavior: each settled write names the statuses it moved messages into: stored windows, transitions and batches of them', async () => {
    const entered: MessageStatus[] = [];
    const unsubscribe = repo.onEntered((s) => entered.push(s));
    await repo.storeMessages([newMessage(1, 1), newMessage(2, 1, { status: 'EXCLUDED', failure_reason: 'test' })], {
      name: 'waker',
      lastBlock: 1,
    });
    expect(entered.sort()).toEqual(['EXCLUDED', 'SENT']);
    const [one] = await repo.findByHash(newMessage(1, 1).message_hash);
    entered.length = 0;
    await repo.transitionMany(
      [{ id: String(one!.id), patch: { compressed_transaction_size: 100 } }],
      ['SENT'],
      'TRANSACTION_SIZE_COMPUTED',
    );
    expect(entered).toEqual(['TRANSACTION_SIZE_COMPUTED']);
    await repo.transition(String(one!.id), ['TRANSACTION_SIZE_COMPUTED'], 'ANCHORED', { anchored_at: new Date() });
    expect(entered).toEqual(['TRANSACTION_SIZE_COMPUTED', 'ANCHORED']);
    // An annotation changes no status: nobody is woken.
    await repo.annotate(String(one!.id), 'ANCHORED', { failure_reason: 'noted' });
    expect(entered).toEqual(['TRANSACTION_SIZE_COMPUTED', 'ANCHORED']);
    unsubscribe();
    await repo.transition(String(one!.id), ['ANCHORED'], 'NON_EXECUTABLE', {}, 'test');
    expect(entered).toEqual(['TRANSACTION_SIZE_COMPUTED', 'ANCHORED']);
  });
});
