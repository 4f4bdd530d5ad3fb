import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/common/db/migrations.js';
import { KeyFailureLimiter } from '../../src/rpc/keys/failures.js';
import { KeyRegistry } from '../../src/rpc/keys/registry.js';
import { displayPrefix, generateApiKey, hashApiKey } from '../../src/rpc/keys/secret.js';
import { ApiKeyStore } from '../../src/rpc/keys/store.js';
import { rpcMigrations } from '../../src/rpc/migrations.js';
import { openTestDb } from '../helpers/db.js';

/**
 * What keeps wrong keys off the database: the registry's negative cache (bounded, and a key that appears
 * after a miss works within unknownTtlMs) and the per-address failure allowance (tokens taken before a
 * lookup, given back for a live key).
 */
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let store: ApiKeyStore;
let schema: string;
beforeAll(async () => {
  testDb = await openTestDb();
  schema = testDb.schema('rpc');
  await testDb.client.query('test.keys_negative', (k) => migrate(k, schema, rpcMigrations));
  store = new ApiKeyStore(testDb.client, schema);
});
afterAll(async () => {
  await testDb.close();
});

/** Counts the api_keys queries run while `fn` runs. */
async function queries(fn: () => Promise<unknown>): Promise<number> {
  let n = 0;
  const listener = (q: { sql: string }) => void (q.sql.includes('api_keys') && n++);
  testDb.client.knex.on('query', listener);
  try {
    await fn();
  } finally {
    testDb.client.knex.off('query', listener);
  }
  return n;
}

describe('negative cache', () => {
  it('behavior: an unknown key is answered from memory for unknownTtlMs; a key inserted after the miss works once that passes', async () => {
    const registry = new KeyRegistry(store, { unknownTtlMs: 300 });
    const key = generateApiKey();
    expect(await queries(() => registry.lookup(key))).toBe(1);
    // The key appears (as if written through another replica's database connection before this one saw it).
    await testDb.client.query('test.keys_negative', (k) =>
      k(`${schema}.api_keys`).insert({
        id: 'k_late00000000',
        name: 'late',
        key_hash: hashApiKey(key),
        key_prefix: displayPrefix(key),
      }),
    );
    let kind: string | undefined;
    expect(await queries(async () => void (kind = (await registry.lookup(key)).kind))).toBe(0);
    expect(kind).toBe('unknown');
    await new Promise((r) => setTimeout(r, 350));
    expect((await registry.lookup(key)).kind).toBe('ok');
  });

  it('behavior: unknown keys are remembered up to maxUnknown, the oldest forgotten first', async () => {
    const registry = new KeyRegistry(store, { maxUnknown: 50 });
    const keys = Array.from({ length: 200 }, generateApiKey);
    for (const k of keys) await registry.lookup(k);
    expect((registry as unknown as { unknown: Map<string, number> }).unknown.size).toBe(50);
    expect(await queries(() => registry.lookup(keys.at(-1)!))).toBe(0);
    expect(await queries(() => registry.lookup(keys[0]!))).toBe(1);
  });
});

describe('failure allowance per address', () => {
  it('behavior: perMinute failures, then a Retry-After until a token is back; a live key gives its token back; addresses apart', () => {
    let now = 0;
    const limiter = new KeyFailureLimiter({ perMinute: 3 }, () => now);
    expect([limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([0, 0, 0]);
    expect(limiter.take('a')).toBe(20); // one token every 20 s at 3 a minute
    expect(limiter.take('b')).toBe(0);
    now = 19_000;
    expect(limiter.take('a')).toBe(1);
    now = 20_000;
    expect(limiter.take('a')).toBe(0);
    limiter.refund('a'); // that lookup found a live key
    expect(limiter.take('a')).toBe(0);
    expect(limiter.take('a')).toBe(20);
    // Past maxAddresses the least recently failed address is forgotten (and starts afresh): memory stays bounded.
    const small = new KeyFailureLimiter({ perMinute: 1, maxAddresses: 2 }, () => now);
    small.take('x');
    expect(small.take('x')).toBeGreaterThan(0);
    small.take('y');
    small.take('z');
    expect(small.size).toBe(2);
    expect(small.take('x')).toBe(0);
    expect(small.take('z')).toBeGreaterThan(0);
  });
});
