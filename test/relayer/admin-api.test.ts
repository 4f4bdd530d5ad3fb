import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { newMessage } from './new-message.js';
import { createLogger } from '../../src/common/log.js';
import { createMetrics } from '../../src/common/metrics.js';
import { listen, type RunningServer } from '../../src/common/http/server.js';
import { migrate } from '../../src/common/db/migrations.js';
import { relayerMigrations } from '../../src/relayer/db/migrations.js';
import { RelayerRepository } from '../../src/relayer/db/repository.js';
import { createRelayerApp } from '../../src/relayer/api/app.js';

/**
 * The admin actions and the history endpoint over a real socket and database, responses checked against the
 * spec (validateResponses): authentication (disabled, missing, wrong, rate limited), retry and abandon with
 * their 409s and idempotency, and the history lines they leave.
 */
const TOKEN = 'a'.repeat(24) + 'secret-token-0123';
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let repo: RelayerRepository;
let schema: string;
let enabled: RunningServer;
let disabled: RunningServer;
let client = 0;

beforeAll(async () => {
  testDb = await openTestDb();
  schema = testDb.schema('relayer');
  await migrate(testDb.client.knex, schema, relayerMigrations);
  repo = new RelayerRepository(testDb.client, schema, 'relayer test-host:1');
  const logger = createLogger({ level: 'silent' });
  const ctx = {
    repo,
    db: testDb.client,
    registry: createMetrics({ defaultMetrics: false }),
    readiness: async () => [],
  };
  // One proxy hop trusted: each test names its own client address in X-Forwarded-For (the rate limit is per address).
  const rateLimit = { perSecond: 0, burst: 1, trustedProxyHops: 1 };
  enabled = await listen(
    createRelayerApp(ctx, logger, {
      validateResponses: true,
      rateLimit,
      admin: { token: TOKEN, maxFailures: 3, windowMs: 60_000 },
    }),
    '127.0.0.1',
    0,
    'api',
    { logger },
  );
  disabled = await listen(
    createRelayerApp(ctx, logger, { validateResponses: true, rateLimit }),
    '127.0.0.1',
    0,
    'api',
    { logger },
  );
});
afterAll(async () => {
  await enabled?.close();
  await disabled?.close();
  await testDb?.close();
});

let index = 1;
async function stored(status: string, direction: 'L1_TO_L2' | 'L2_TO_L1' = 'L1_TO_L2') {
  const m = newMessage(index, index++, { direction });
  await repo.storeMessages([m], { name: 'c', lastBlock: index });
  await testDb.client
    .knex(`${schema}.message`)
    .where({ message_hash: m.message_hash })
    .update({ status, retries: 4, cycles: 2, merkle_root: `0x${'11'.repeat(32)}`, leaf_index: 3 });
  return m.message_hash;
}

function post(server: RunningServer, hash: string, action: string, auth?: string) {
  const headers: Record<string, string> = { 'x-forwarded-for': `10.0.0.${++client}` };
  if (auth !== undefined) headers.authorization = auth;
  return fetch(`${server.url}/messages/${hash}/${action}`, { method: 'POST', headers });
}

const history = async (hash: string) =>
  (await (await fetch(`${enabled.url}/messages/${hash}/history`)).json()) as {
    status: string;
    history: { from: string | null; to: string; actor: string | null; reason: string | null }[];
  };

describe('admin API', () => {
  it('error: unset API_ADMIN_TOKEN answers 403 "admin API disabled" to every admin route, even with a token', async () => {
    const hash = await stored('NEEDS_MANUAL_INTERVENTION');
    for (const action of ['retry', 'abandon']) {
      const res = await post(disabled, hash, action, `Bearer ${TOKEN}`);
      expect([res.status, res.headers.get('content-type'), ((await res.json()) as { detail: string }).detail]).toEqual([
        403,
        'application/problem+json; charset=utf-8',
        'admin API disabled (API_ADMIN_TOKEN is not set)',
      ]);
    }
    expect((await history(hash)).status).toBe('NEEDS_MANUAL_INTERVENTION');
  });

  it('error: a missing or wrong token is 401 (WWW-Authenticate: Bearer) and changes nothing; repeated failures from one address are 429 with Retry-After, even with the right token then', async () => {
    const hash = await stored('NEEDS_MANUAL_INTERVENTION');
    for (const auth of [undefined, 'Bearer wrong', `Bearer ${TOKEN}x`, `Basic ${TOKEN}`]) {
      const res = await post(enabled, hash, 'retry', auth);
      expect([res.status, res.headers.get('www-authenticate')]).toEqual([401, 'Bearer']);
    }
    expect((await history(hash)).status).toBe('NEEDS_MANUAL_INTERVENTION');
    const headers = { 'x-forwarded-for': '10.9.9.9' };
    const tries = [];
    for (let i = 0; i < 4; i++)
      tries.push(
        (
          await fetch(`${enabled.url}/messages/${hash}/retry`, {
            method: 'POST',
            headers: { ...headers, authorization: 'Bearer nope' },
          })
        ).status,
      );
    expect(tries).toEqual([401, 401, 401, 429]);
    const limited = await fetch(`${enabled.url}/messages/${hash}/retry`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${TOKEN}` },
    });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another address is not affected.
    expect((await post(enabled, hash, 'retry', `Bearer ${TOKEN}`)).status).toBe(200);
  });

  it('behavior: retry puts a parked message back at its anchoring check with fresh counters, recorded once with actor admin; a second retry is 200 changed=false with no new line', async () => {
    const hash = await stored('NEEDS_MANUAL_INTERVENTION');
    const before = (await history(hash)).history.length;
    const res = await post(enabled, hash, 'retry', `Bearer ${TOKEN}`);
    const body = (await res.json()) as {
      action: string;
      changed: boolean;
      message: { status: string; retries: number; cycles: number };
    };
    expect([
      res.status,
      body.action,
      body.changed,
      body.message.status,
      body.message.retries,
      body.message.cycles,
    ]).toEqual([200, 'retry', true, 'TRANSACTION_SIZE_COMPUTED', 0, 0]);
    const again = (await (await post(enabled, hash, 'retry', `Bearer ${TOKEN}`)).json()) as {
      changed: boolean;
      message: { status: string };
    };
    expect([again.changed, again.message.status]).toEqual([false, 'TRANSACTION_SIZE_COMPUTED']);
    const h = await history(hash);
    expect(h.history).toHaveLength(before + 1);
    expect(h.history.at(-1)).toMatchObject({
      from: 'NEEDS_MANUAL_INTERVENTION',
      to: 'TRANSACTION_SIZE_COMPUTED',
      actor: 'admin',
    });
    expect(h.history.at(-1)!.reason).toMatch(/^retry by admin \(was NEEDS_MANUAL_INTERVENTION\)$/);
  });

  it('behavior: an L2→L1 retry restarts at SENT without its proof', async () => {
    const hash = await stored('CLAIMED_REVERTED', 'L2_TO_L1');
    const body = (await (await post(enabled, hash, 'retry', `Bearer ${TOKEN}`)).json()) as {
      message: { status: string };
    };
    expect(body.message.status).toBe('SENT');
    const row = await testDb.client
      .knex(`${schema}.message`)
      .where({ message_hash: hash })
      .first('merkle_root', 'leaf_index', 'retries');
    expect(row).toEqual({ merkle_root: null, leaf_index: null, retries: 0 });
  });

  it('error: 409 names the current status when the action does not apply', async () => {
    const done = await stored('CLAIMED_SUCCESS');
    const pending = await stored('PENDING');
    const cases: [string, string, string][] = [
      [done, 'retry', 'CLAIMED_SUCCESS'],
      [done, 'abandon', 'CLAIMED_SUCCESS'],
      [pending, 'abandon', 'PENDING'],
    ];
    for (const [hash, action, status] of cases) {
      const res = await post(enabled, hash, action, `Bearer ${TOKEN}`);
      expect([res.status, ((await res.json()) as { detail: string }).detail]).toEqual([
        409,
        `cannot ${action} message ${hash} (L1_TO_L2) in status ${status}`,
      ]);
    }
    expect((await post(enabled, `0x${'ee'.repeat(32)}`, 'retry', `Bearer ${TOKEN}`)).status).toBe(404);
  });

  it('behavior: abandon moves to ABANDONED once (idempotent), which retry then refuses; the history endpoint shows every line oldest first', async () => {
    const hash = await stored('ANCHORED');
    const first = (await (await post(enabled, hash, 'abandon', `Bearer ${TOKEN}`)).json()) as {
      changed: boolean;
      message: { status: string };
    };
    const second = (await (await post(enabled, hash, 'abandon', `Bearer ${TOKEN}`)).json()) as {
      changed: boolean;
      message: { status: string };
    };
    expect([first.changed, first.message.status, second.changed, second.message.status]).toEqual([
      true,
      'ABANDONED',
      false,
      'ABANDONED',
    ]);
    expect((await post(enabled, hash, 'retry', `Bearer ${TOKEN}`)).status).toBe(409);
    const h = await history(hash);
    expect(h.history.map((e) => [e.from, e.to, e.actor])).toEqual([
      [null, 'SENT', 'relayer test-host:1'],
      ['ANCHORED', 'ABANDONED', 'admin'],
    ]);
    expect((await fetch(`${enabled.url}/messages/${`0x${'ef'.repeat(32)}`}/history`)).status).toBe(404);
  });
});
