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

let first: TestApi;
let secondDb: DbClient;
let second: TokenApiHandle;
let secondCommon: ReturnType<typeof testCommon>;

beforeAll(async () => {
  first = await startTestApi({ publicUrl: 'http://api.example.org' }, undefined, { validateResponses: false });
  await seedTokens(first, TOKENS.map((address) => ({ address })));
  secondDb =
    first.db.client.kind === 'postgres'
      ? await createDbClient(loadDatabaseConfig({ ...process.env, DATABASE_PGLITE_DIR: PGLITE_MEMORY }), { poolMax: 4 })
      : first.db.client;
  secondCommon = testCommon();
  second = await startTokenApi({ common: secondCommon, db: secondDb, config: apiConfig({ publicUrl: 'http://api.example.org' }), schema: first.schema });
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
  it('behavior: while the indexer writes, each replica serves whole writes and the two stay within one write of each other', async () => {
    const store = new IndexerStore(first.schema);
    const base = Date.now() - 60_000;
    let writing = true;
    const writer = (async () => {
      for (let k = 1; k <= WRITES; k++) {
        await first.db.client.knex.transaction((trx) =>
          store.recordObservations(trx, TOKENS.map((token) => ({ token, price: k, at: new Date(base + k * 1_000) }))),
        );
        await new Promise((r) => setTimeout(r, 250));
      }
      writing = false;
    })();

    const seen = new Set<number>();
    let samples = 0;
    let widest = 0;
    while (writing) {
      const [a, b, prices] = await Promise.all([
        fetch(`${first.url}${pageUrl}`).then((r) => r.json() as Promise<Page>),
        fetch(`${second.url}${pageUrl}`).then((r) => r.json() as Promise<Page>),
        fetch(`${second.url}${pricesUrl}`).then((r) => r.json() as Promise<Record<string, { price: number }[]>>),
      ]);
      const [ka, kb] = [writeOf(a), writeOf(b)];
      expect(ka, 'replica 1 mixed two writes in one page').not.toBeNaN();
      expect(kb, 'replica 2 mixed two writes in one page').not.toBeNaN();
      const lastPoints = new Set(Object.values(prices).map((series) => series.at(-1)?.price ?? 0));
      expect(lastPoints.size, 'a price batch mixed two writes').toBe(1);
      widest = Math.max(widest, Math.abs(ka - kb));
      seen.add(ka).add(kb);
      samples++;
    }
    await writer;
    expect(samples).toBeGreaterThan(WRITES);
    expect(seen.size).toBeGreaterThan(3); // the reads did interleave with the writes
    expect(widest).toBeLessThanOrEqual(1);

    // Once both hold the last write, they give the same bytes and the same ETag.
    await Promise.all([first.api.sync(), second.sync()]);
    const [x, y] = await Promise.all([fetch(`${first.url}${pageUrl}`), fetch(`${second.url}${pageUrl}`)]);
    expect(x.headers.get('etag')).toBe(y.headers.get('etag'));
    const [tx, ty] = [await x.text(), await y.text()];
    expect(tx).toBe(ty);
    expect(writeOf(JSON.parse(tx) as Page)).toBe(WRITES);
  });
});
