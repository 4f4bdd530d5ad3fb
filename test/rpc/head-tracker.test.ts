import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/log.js';
import { HeadTracker } from '../../src/rpc/head/tracker.js';
import type { HeadEvent } from '../../src/rpc/ws/types.js';

const hash = (fork: string, n: number) => `0x${fork}${n.toString(16).padStart(63, '0')}`;
const header = (fork: string, n: number, parentFork = fork) => ({
  number: `0x${n.toString(16)}`,
  hash: hash(fork, n),
  parentHash: n === 0 ? hash('0', 0) : hash(parentFork, n - 1),
});

/** A node's chain held in memory: blockByHash is what the tracker walks back with. */
function chain() {
  const byHash = new Map<string, ReturnType<typeof header>>();
  const add = (h: ReturnType<typeof header>) => {
    byHash.set(h.hash, h);
    return h;
  };
  const tracker = new HeadTracker({
    depth: 16,
    logger: createLogger({ level: 'silent' }),
    blockByHash: async (h) => byHash.get(h) ?? null,
  });
  const events: HeadEvent[] = [];
  tracker.subscribe((e) => events.push(e));
  return { add, tracker, events };
}

const numbers = (bs: { number: bigint }[]) => bs.map((b) => Number(b.number));

describe('head tracker', () => {
  it('behavior: each new head is announced once with number, hash and parent hash, synchronously when it extends the tip', async () => {
    const { add, tracker, events } = chain();
    tracker.observe(add(header('a', 1)), 'u0');
    await tracker.settled();
    tracker.observe(add(header('a', 2)), 'u0');
    // Applied in the same tick: a request right after the notification sees the new head.
    expect(tracker.head?.number).toBe(2n);
    tracker.observe(header('a', 2), 'u0'); // the poll seeing the same block again
    await tracker.settled();
    expect(events.map((e) => numbers(e.added))).toEqual([[1], [2]]);
    expect(events[1]!.head).toMatchObject({ number: 2n, hash: hash('a', 2), parentHash: hash('a', 1) });
    expect(tracker.blockAt(1n)?.hash).toBe(hash('a', 1));
  });

  it('behavior: blocks missed between two observations are fetched by parent hash and announced in order', async () => {
    const { add, tracker, events } = chain();
    tracker.observe(add(header('a', 1)), 'u0');
    for (let n = 2; n <= 4; n++) add(header('a', n));
    tracker.observe(add(header('a', 5)), 'u0');
    await tracker.settled();
    expect(events.map((e) => numbers(e.added))).toEqual([[1], [2, 3, 4, 5]]);
    expect(events[1]!.removed).toEqual([]);
  });

  it('behavior: a reorg names the removed blocks and the added ones, back to the common ancestor', async () => {
    const { add, tracker, events } = chain();
    for (let n = 1; n <= 5; n++) {
      tracker.observe(add(header('a', n)), 'u0');
      await tracker.settled();
    }
    // Fork at 3: b3 (parent a2), b4, then the node announces b4 as its head.
    add(header('b', 3, 'a'));
    tracker.observe(add(header('b', 4)), 'u0');
    await tracker.settled();
    const reorg = events.at(-1)!;
    expect(numbers(reorg.removed)).toEqual([3, 4, 5]);
    expect(reorg.removed.map((b) => b.hash)).toEqual([hash('a', 3), hash('a', 4), hash('a', 5)]);
    expect(numbers(reorg.added)).toEqual([3, 4]);
    expect(tracker.head?.hash).toBe(hash('b', 4));
    expect(tracker.blockAt(5n)).toBeUndefined();
    expect(tracker.blockAt(3n)?.hash).toBe(hash('b', 3));
  });

  it('behavior: a lagging second node does not move the head back; the node that gave the head can', async () => {
    const { add, tracker, events } = chain();
    for (let n = 1; n <= 3; n++) {
      tracker.observe(add(header('a', n)), 'u0');
      await tracker.settled();
    }
    tracker.observe(add(header('c', 2, 'a')), 'u1');
    await tracker.settled();
    expect(tracker.head?.number).toBe(3n);
    expect(events).toHaveLength(3);
    const version = tracker.version;
    tracker.observe(header('c', 2, 'a'), 'u0'); // u0 itself now says its head is c2: a reorg to a shorter chain
    await tracker.settled();
    expect(tracker.head?.hash).toBe(hash('c', 2));
    expect(numbers(events.at(-1)!.removed)).toEqual([2, 3]);
    expect(tracker.version).toBeGreaterThan(version);
  });

  it('behavior: finalized only moves forward, and never past the head', async () => {
    const { add, tracker } = chain();
    tracker.observe(add(header('a', 10)), 'u0');
    await tracker.settled();
    tracker.observeFinalized(4n, 'u0');
    tracker.observeFinalized(2n, 'u0');
    expect(tracker.finalized).toBe(4n);
    tracker.observeFinalized(9n, 'u1'); // not the head's node
    expect(tracker.finalized).toBe(4n);
  });
});
