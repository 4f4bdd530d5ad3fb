import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { openTestDb, databaseKind } from '../helpers/db.js';
import { acquireLeadership } from '../../src/common/db/lock.js';

let db: Awaited<ReturnType<typeof openTestDb>>;
beforeAll(async () => {
  db = await openTestDb();
});
afterAll(async () => db?.close());

describe(`leadership lock on ${databaseKind()}`, () => {
  it('behavior: one holder at a time; the standby takes over on release', async () => {
    const name = `test-${randomBytes(4).toString('hex')}`;
    const stop = new AbortController();
    const first = await acquireLeadership(db.client, name, { signal: stop.signal, retryMs: 50 });
    expect(first).toBeDefined();
    let secondAcquired = false;
    const second = acquireLeadership(db.client, name, { signal: stop.signal, retryMs: 50 }).then((l) => {
      secondAcquired = true;
      return l;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(secondAcquired).toBe(false);
    await first!.release();
    expect(first!.signal.aborted).toBe(true);
    const standby = await second;
    expect(standby).toBeDefined();
    expect(standby!.signal.aborted).toBe(false);
    await standby!.release();
  });

  it('behavior: a waiting standby gives up when its own signal aborts', async () => {
    const name = `test-${randomBytes(4).toString('hex')}`;
    const holder = await acquireLeadership(db.client, name, { signal: new AbortController().signal, retryMs: 50 });
    const abort = new AbortController();
    const waiting = acquireLeadership(db.client, name, { signal: abort.signal, retryMs: 50 });
    setTimeout(() => abort.abort(), 150);
    await expect(waiting).resolves.toBeUndefined();
    await holder!.release();
  });
});
