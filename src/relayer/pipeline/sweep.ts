import { compareRows } from '../db/change-feed.js';
import type { MessageRow } from '../db/rows.js';

/** The first batch a loop takes after it was idle (or at start): a backlog's first claims need not wait for the rest. */
export const FIRST_BATCH = 32;

/**
 * Takes a loop's due rows in bounded batches, so that each stage of the pipeline hands its first rows on before
 * it has worked through a whole backlog: after a restart on 600 due messages the first claim was signed only
 * once every message had been stored, sized and anchored (~3 s of CPU). The first batch after an idle tick is
 * FIRST_BATCH rows and each next one twice the last, up to the loop's page limit, so a long backlog is soon
 * worked in full pages again (the steady rate's statements per message stay what they were).
 *
 * A sweep goes through the page in the pipeline's order, one batch per iteration (`more`: go on at once), and
 * ends at the page's end; the next sweep starts from the front again. So a row that stays due (a message not
 * anchored yet) never holds back the rows after it, and an iteration after a finished sweep waits the loop's
 * interval, as before.
 */
export class Sweep {
  private after: MessageRow | undefined;
  private size = FIRST_BATCH;

  constructor(private readonly max: number) {}

  /** The next batch of `rows` (the loop's page, in the pipeline's order); `more` when rows are left in this sweep. */
  next(rows: readonly MessageRow[]): { batch: MessageRow[]; more: boolean } {
    if (rows.length === 0) {
      this.after = undefined;
      this.size = FIRST_BATCH;
      return { batch: [], more: false };
    }
    const after = this.after;
    const start = after === undefined ? 0 : rows.findIndex((r) => compareRows(r, after) > 0);
    // Past every row left (they moved on meanwhile): this sweep is over, a new one starts at the front.
    const rest = start < 0 ? rows : rows.slice(start);
    const batch = rest.slice(0, Math.min(this.size, this.max));
    const more = rest.length > batch.length;
    this.after = more ? batch.at(-1) : undefined;
    this.size = Math.min(this.size * 2, this.max);
    return { batch, more };
  }
}
