import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { AnswerCache } from '../../src/rpc/cache/answer-cache.js';
import { RawJson } from '../../src/rpc/upstream/raw-json.js';

describe('AnswerCache eviction', () => {
  it('behavior: over its budget the oldest answer not read since goes first; a read one gets a second chance', () => {
    const answer = new RawJson('"0x' + '1'.repeat(100) + '"');
    const entryBytes = 'k0'.length + answer.length + 64;
    const cache = new AnswerCache(entryBytes * 8, new Registry());
    for (let i = 0; i < 8; i++) cache.set(`k${i}`, answer, 'final');
    expect(cache.get('k0')).toBe(answer);
    cache.set('k8', answer, 'final');
    // k0 was read: k1, the oldest unread, made room.
    expect(cache.get('k1')).toBeUndefined();
    expect(cache.get('k0')).toBe(answer);
    expect(cache.usedBytes).toBeLessThanOrEqual(entryBytes * 8);
    // Everything read since: each goes round once, then the oldest of them goes.
    for (let i = 2; i <= 8; i++) expect(cache.get(`k${i}`)).toBe(answer);
    cache.set('k9', answer, 'final');
    expect(cache.get('k9')).toBe(answer);
    expect([...Array(9).keys()].filter((i) => cache.get(`k${i}`) !== undefined)).toHaveLength(7);
  });
});
