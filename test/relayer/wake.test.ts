import { describe, expect, it } from 'vitest';
import { Wake } from '../../src/relayer/pipeline/wake.js';

/**
 * A loop's pause ended by the stage before it (src/relayer/pipeline/wake.ts): the pauses here are an hour long,
 * so a test whose ring did not end one would time out.
 */
const HOUR = 3_600_000;

describe('wake', () => {
  it('behavior: a ring ends the pause under way', async () => {
    const w = new Wake();
    const paused = w.pause(HOUR, new AbortController().signal);
    w.ring();
    expect(await paused).toBe(true);
  });

  it('behavior: a ring while the loop works ends its next pause at once, and only that one', async () => {
    const w = new Wake();
    const signal = new AbortController().signal;
    w.ring();
    w.ring();
    expect(await w.pause(HOUR, signal)).toBe(true);
    let ended = false;
    const second = w.pause(HOUR, signal).then((v) => {
      ended = true;
      return v;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(ended).toBe(false);
    w.ring();
    expect(await second).toBe(true);
  });

  it('behavior: stopping ends the pause with false, as a sleep does', async () => {
    const w = new Wake();
    const stop = new AbortController();
    const paused = w.pause(HOUR, stop.signal);
    stop.abort();
    expect(await paused).toBe(false);
    expect(await w.pause(HOUR, stop.signal)).toBe(false);
  });
});
