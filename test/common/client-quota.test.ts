import { describe, expect, it } from 'vitest';
import { ClientQuota } from '../../src/common/http/client-quota.js';

/** The entries a quota remembers (private: read here to prove the memory bound, nothing else). */
const remembered = (q: ClientQuota) => (q as unknown as { held: Map<string, number> }).held.size;

describe('ClientQuota', () => {
  it('behavior: a client holds at most its cap; what it gives back can be taken again, by it and not by others', () => {
    const q = new ClientQuota(2);
    expect([q.take('a'), q.take('a'), q.take('a')]).toEqual([true, true, false]);
    expect(q.take('b', 2)).toBe(true);
    q.release('a');
    expect(q.take('a')).toBe(true);
    expect(q.take('a')).toBe(false);
    // Giving back more than was taken never leaves credit behind.
    q.release('b', 5);
    expect([q.take('b', 2), q.take('b')]).toEqual([true, false]);
  });

  it('behavior: clients back at zero are forgotten once more than 4,096 pile up, so the map stays bounded', () => {
    const q = new ClientQuota(1);
    let refused = 0;
    for (let i = 0; i < 20_000; i++) {
      if (!q.take(`client-${i}`)) refused++;
      q.release(`client-${i}`);
    }
    expect(refused).toBe(0);
    expect(q.take('holder')).toBe(true);
    expect(remembered(q)).toBeLessThanOrEqual(4_097 + 1);
    // A forgotten client starts afresh, with its whole cap.
    expect([q.take('client-0'), q.take('client-0')]).toEqual([true, false]);
  });
});
