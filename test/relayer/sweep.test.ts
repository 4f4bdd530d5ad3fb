import { describe, expect, it } from 'vitest';
import type { MessageRow } from '../../src/relayer/db/rows.js';
import { FIRST_BATCH, Sweep } from '../../src/relayer/pipeline/sweep.js';

/**
 * How a pipeline loop takes its due rows (pipeline/sweep.ts): a backlog in growing batches, so the first rows
 * reach the next stage before the rest is worked, and a row that stays due never holds back the rows after it.
 */
const row = (i: number) => ({ id: String(i), sent_block_number: String(i), message_nonce: String(i) }) as MessageRow;
const rows = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => row(from + k));
const ids = (batch: MessageRow[]) => batch.map((r) => Number(r.id));

describe('sweep', () => {
  it('behavior: a backlog is taken first in a small batch, then in batches twice as large up to the page limit', () => {
    const sweep = new Sweep(100);
    const page = rows(1, 300);
    const sizes: number[] = [];
    const seen: number[] = [];
    // The loop's page as a full read gives it: the oldest rows not yet worked (each batch moves on to the next
    // stage). A sweep over a full page ends with a full batch, and the loop goes on at once (its page was full).
    for (let left = page; left.length > 0; ) {
      const { batch } = sweep.next(left.slice(0, 100));
      sizes.push(batch.length);
      seen.push(...ids(batch));
      left = left.filter((r) => !batch.includes(r));
    }
    expect(sizes).toEqual([FIRST_BATCH, 2 * FIRST_BATCH, 100, 100, 300 - 200 - 3 * FIRST_BATCH]);
    expect(seen).toEqual(ids(page));
  });

  it('behavior: rows that stay due do not hold back the rows after them, and a sweep ends at the end of the page', () => {
    const sweep = new Sweep(1_000);
    const page = rows(1, 100); // none of them moves on (say, none is anchored yet)
    const first = sweep.next(page);
    expect(ids(first.batch)).toEqual(ids(rows(1, FIRST_BATCH)));
    expect(first.more).toBe(true);
    const second = sweep.next(page);
    expect(ids(second.batch)).toEqual(ids(rows(FIRST_BATCH + 1, 3 * FIRST_BATCH)));
    const third = sweep.next(page);
    expect(ids(third.batch)).toEqual(ids(rows(3 * FIRST_BATCH + 1, 100)));
    expect(third.more).toBe(false);
    // The next sweep (after the loop's interval) starts from the front again.
    expect(ids(sweep.next(page).batch)[0]).toBe(1);
  });

  it('behavior: after an idle iteration the first batch is small again', () => {
    const sweep = new Sweep(1_000);
    sweep.next(rows(1, 500));
    sweep.next(rows(1, 500));
    expect(sweep.next([])).toEqual({ batch: [], more: false });
    expect(sweep.next(rows(600, 900)).batch).toHaveLength(FIRST_BATCH);
  });

  it('behavior: rows that moved on while a sweep was under way: the sweep goes on after the last row it took', () => {
    const sweep = new Sweep(1_000);
    sweep.next(rows(1, 100));
    // Rows 1..32 moved on; a row before them came due meanwhile (it waits for the next sweep).
    const { batch } = sweep.next([row(0), ...rows(FIRST_BATCH + 1, 100)]);
    expect(ids(batch)[0]).toBe(FIRST_BATCH + 1);
  });
});
