import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { migrate } from '../../src/common/db/migrations.js';
import { rpcMigrations } from '../../src/rpc/migrations.js';
import { KeyRegistry } from '../../src/rpc/keys/registry.js';
import { generateApiKey, hashApiKey } from '../../src/rpc/keys/secret.js';
import { ApiKeyStore } from '../../src/rpc/keys/store.js';
import { openTestDb } from '../helpers/db.js';
import { processDatabase, type ProcessDatabase } from '../e2e/relayer/process.js';
import { l2stackArgs } from '../helpers/l2stack.js';

/**
 * API keys of the private tier: stored hashed, looked up from memory by every replica, and a revocation
 * reaches every replica within the registry's TTL. The CLI runs as a real process on its own database.
 */
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let store: ApiKeyStore;
let schema: string;
beforeAll(async () => {
  testDb = await openTestDb();
  schema = testDb.schema('rpc');
  await testDb.client.query('test.keys', (k) => migrate(k, schema, rpcMigrations));
  store = new ApiKeyStore(testDb.client, schema);
});
afterAll(async () => {
  await testDb.close();
});

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('API key store and registry', () => {
  it('behavior: a created key is found with its limits; only its SHA-256 is stored', async () => {
    const { record, key } = await store.create('wallet-backend', {
      ratePerSecond: 200,
      burst: 400,
      methods: ['eth_call', 'eth_blockNumber'],
    });
    expect(key).toMatch(/^l2s_[A-Za-z0-9_-]{43}$/);
    expect(record).toMatchObject({
      name: 'wallet-backend',
      ratePerSecond: 200,
      burst: 400,
      methods: ['eth_call', 'eth_blockNumber'],
    });
    const rows = (await testDb.client.query('test.keys', (k) => k(`${schema}.api_keys`).select('*'))) as Record<
      string,
      unknown
    >[];
    const text = JSON.stringify(rows);
    expect(text).not.toContain(key);
    expect(text).toContain(hashApiKey(key));
    const registry = new KeyRegistry(store);
    expect(await registry.lookup(key)).toMatchObject({ kind: 'ok', record: { id: record.id, ratePerSecond: 200 } });
  });

  it('error: unknown, malformed and duplicate keys are told apart and named', async () => {
    const registry = new KeyRegistry(store);
    expect(await registry.lookup(generateApiKey())).toEqual({ kind: 'unknown' });
    expect(await registry.lookup('not-a-key')).toEqual({ kind: 'unknown' });
    await store.create('dup');
    await expect(store.create('dup')).rejects.toThrow(/a key named "dup" already exists/);
    await expect(store.create('has space')).rejects.toThrow(/key name must be/);
    await expect(store.create('zero-rate', { ratePerSecond: 0 })).rejects.toThrow(/rate must be a positive number/);
  });

  it('behavior: a revocation reaches two replicas within their TTL; before it both serve the key from memory', async () => {
    const { key, record } = await store.create('revoke-me');
    const a = new KeyRegistry(store, { ttlMs: 300 });
    const b = new KeyRegistry(store, { ttlMs: 300 });
    expect((await a.lookup(key)).kind).toBe('ok');
    expect((await b.lookup(key)).kind).toBe('ok');
    expect((await store.revoke(record.name))?.id).toBe(record.id);
    expect(await store.revoke(record.id)).toBeUndefined(); // already revoked
    await wait(350);
    expect((await a.lookup(key)).kind).toBe('revoked');
    expect((await b.lookup(key)).kind).toBe('revoked');
  });

  it('behavior: concurrent lookups of one key share one query, and distinct probes do not grow memory past the cap', async () => {
    const { key } = await store.create('shared-lookup');
    const registry = new KeyRegistry(store, { maxEntries: 50 });
    const queries: string[] = [];
    const listener = (q: { sql: string }) => queries.push(q.sql);
    testDb.client.knex.on('query', listener);
    try {
      const all = await Promise.all(Array.from({ length: 20 }, () => registry.lookup(key)));
      expect(all.every((r) => r.kind === 'ok')).toBe(true);
      expect(queries.filter((q) => q.includes('api_keys')).length).toBe(1);
    } finally {
      testDb.client.knex.off('query', listener);
    }
    for (let i = 0; i < 200; i++) await registry.lookup(generateApiKey());
    expect((registry as unknown as { entries: Map<string, unknown> }).entries.size).toBeLessThanOrEqual(50);
  });
});

function keysCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, l2stackArgs('rpc', 'keys', ...args), {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('l2stack rpc keys', () => {
  let pdb: ProcessDatabase;
  beforeAll(async () => {
    pdb = await processDatabase(testDb, 'keys');
  });
  afterAll(async () => {
    await pdb.drop();
  });

  it('behavior: create prints the key once on stdout, list shows it without the secret, revoke marks it revoked', async () => {
    const created = await keysCli(
      ['create', 'indexer-1', '--rate', '100', '--methods', 'eth_getLogs,eth_blockNumber'],
      pdb.env,
    );
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^l2s_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toMatch(/created k_[0-9a-f]{12} \(indexer-1\)/);

    const listed = await keysCli(['list'], pdb.env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('indexer-1');
    expect(listed.stdout).toContain('100/s');
    expect(listed.stdout).toContain('eth_getLogs,eth_blockNumber');
    expect(listed.stdout).toContain(key.slice(0, 8));
    expect(listed.stdout).not.toContain(key);

    const revoked = await keysCli(['revoke', 'indexer-1'], pdb.env);
    expect(revoked.code, revoked.stderr).toBe(0);
    const json = JSON.parse((await keysCli(['list', '--json'], pdb.env)).stdout) as {
      name: string;
      revokedAt?: string;
    }[];
    expect(json.find((r) => r.name === 'indexer-1')?.revokedAt).toBeDefined();
  }, 240_000); // four process start-ups, each booting the embedded database: slow on a loaded 2-core machine

  it('error: bad input and unknown keys exit 2 naming the problem', async () => {
    const unknown = await keysCli(['create', 'x', '--methods', 'eth_call,admin_peers'], pdb.env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('does not serve: admin_peers');
    const rate = await keysCli(['create', 'x', '--rate', 'fast'], pdb.env);
    expect(rate.code).toBe(2);
    expect(rate.stderr).toContain('--rate must be a number');
    const missing = await keysCli(['revoke', 'no-such-key'], pdb.env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no active key with id or name "no-such-key"');
    const none = await keysCli([], pdb.env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('choose a subcommand');
  }, 240_000);
});
