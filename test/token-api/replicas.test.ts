import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDbClient, type DbClient } from '../../src/common/db/client.js';
import { PGLITE_MEMORY, loadDatabaseConfig } from '../../src/common/db/config.js';
import { IndexerStore } from '../../src/token-api/indexer/store.js';
import { startTokenApi, type TokenApiHandle } from '../../src/token-api/index.js';
import { addr, apiConfig, seedTokens, startTestApi, testCommon, type TestApi } from './helpers.js';

/**
 * Two replicas over one database while the indexer's store writes: each with its own connection pool and
 * its own LISTEN connection on PostgreSQL (on PGlite both share the embedded database of this process).
 * Every write prices all tokens at k in one transaction, as an indexer batch does, so a page mixing two
 * writes would show two prices.
 */
const TOKENS = Array.from({ length: 40 }, (_, i) => addr(0x500 + i));
const WRITES = 15;
/**
 * How long a write may take to reach both replicas: a deadline on a loaded machine, not a figure the test
 * asserts. The fallback poll is off (an hour), so only the change notification can bring it.
 */
const FOLLOW_DEADLINE_MS = 60_000;
const NO_POLL = { readModelPollMs: 3_600_000 };

let first: TestApi;
let secondDb: DbClient;
let second: TokenApiHandle;
let secondCommon: ReturnType<typeof testCommon>;

beforeAll(async () => {
  first = await startTestApi({ publicUrl: 'http://api.example.org', ...NO_POLL }, undefined, {
    validateResponses: false,
  });
  await seedTokens(
    first,
    TOKENS.map((address) => ({ address })),
  );
  secondDb =
    first.db.client.kind === 'postgres'
      ? await createDbClient(loadDatabaseConfig({ ...process.env, DATABASE_PGLITE_DIR: PGLITE_MEMORY }), { poolMax: 4 })
      : first.db.client;
  secondCommon = testCommon();
  second = await startTokenApi({
    common: secondCommon,
    db: secondDb,
    config: apiConfig({ publicUrl: 'http://api.example.org', ...NO_POLL }),
    schema: first.schema,
  });
});
afterAll(async () => {
  await secondCommon?.shutdown.run('test done');
  if (secondDb && secondDb !== first?.db.client) await secondDb.close();
  await first?.close();
});

interface Page {
  data: { currentPrice: number | null }[];
}
/** The single write a page shows (0 before the first), or NaN when it mixes writes. */
const writeOf = (page: Page) => {
  const prices = new Set(page.data.map((t) => t.currentPrice ?? 0));
  return prices.size === 1 ? [...prices][0]! : Number.NaN;
};
const pageUrl = '/tokens?limit=100&order=contractAddress&sort=asc';
const pricesUrl = `/prices?addresses=${TOKENS.join(',')}`;

describe('two replicas', () => {
  it('behavior: while the indexer writes, each replica serves whole writes, follows every write by notification and never goes back', async () => {
    const store = new IndexerStore(first.schema);
    const base = Date.now() - 60_000;
    const write = (k: number) =>
      first.db.client.knex.transaction((trx) =>
        store.recordObservations(
          trx,
          TOKENS.map((token) => ({ token, price: k, at: new Date(base + k * 1_000) })),
        ),
      );

    // The next write starts once both replicas serve the last one (not after a fixed pause: on a loaded
    // machine the reads, not the clock, set the pace). It is not awaited, so the reads overlap its commit.
    const served = [0, 0];
    let k = 0;
    let pending: Promise<unknown> = Promise.resolve();
    let writeFailed: unknown;
    let since = Date.now();
    for (;;) {
      const [a, b, prices] = await Promise.all([
        fetch(`${first.url}${pageUrl}`).then((r) => r.json() as Promise<Page>),
        fetch(`${second.url}${pageUrl}`).then((r) => r.json() as Promise<Page>),
        fetch(`${second.url}${pricesUrl}`).then((r) => r.json() as Promise<Record<string, { price: number }[]>>),
      ]);
      const now = [writeOf(a), writeOf(b)];
      now.forEach((x, i) => {
        expect(x, `replica ${i + 1} mixed two writes in one page`).not.toBeNaN();
        expect(x, `replica ${i + 1} went back from write ${served[i]}`).toBeGreaterThanOrEqual(served[i]!);
        served[i] = x;
      });
      const lastPoints = new Set(Object.values(prices).map((series) => series.at(-1)?.price ?? 0));
      expect(lastPoints.size, 'a price batch mixed two writes').toBe(1);
      if (writeFailed) throw writeFailed;
      if (served.every((x) => x === k)) {
        await pending;
        if (k === WRITES) break;
        pending = write(++k).catch((err: unknown) => (writeFailed = err));
        since = Date.now();
      } else if (Date.now() - since > FOLLOW_DEADLINE_MS) {
        throw new Error(
          `write ${k} not served by both replicas ${FOLLOW_DEADLINE_MS} ms after it began (they serve ${served.join(' and ')})`,
        );
      }
    }

    // Once both hold the last write, they give the same bytes and the same ETag.
    await Promise.all([first.api.sync(), second.sync()]);
    const [x, y] = await Promise.all([fetch(`${first.url}${pageUrl}`), fetch(`${second.url}${pageUrl}`)]);
    expect(x.headers.get('etag')).toBe(y.headers.get('etag'));
    const [tx, ty] = [await x.text(), await y.text()];
    expect(tx).toBe(ty);
    expect(writeOf(JSON.parse(tx) as Page)).toBe(WRITES);
  });
});
