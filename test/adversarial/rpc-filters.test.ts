import { randomBytes } from 'node:crypto';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Anvil } from '../../src/devnet/anvil.js';
import { databaseKind } from '../helpers/db.js';
import { post } from '../rpc/helpers.js';
import { blockNumberCanary, chain, openTestDb, rssMiB, startRpcUnderTest, type RpcUnderTest } from './rpc-harness.js';

/**
 * Issue 18, item 2: filters grew memory without bound (no cap on live filters per client, on addresses or
 * topics per filter, and RSS 601 → 1,826 MiB over three rounds of 200 large filters with expiry between).
 */
let anvil: Anvil;
let db: Awaited<ReturnType<typeof openTestDb>>;
let schema: string;
let a: RpcUnderTest;
let b: RpcUnderTest;

type Reply = {
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: { cap?: string; limit?: number } };
};

const addresses = (n: number) => Array.from({ length: n }, () => `0x${randomBytes(20).toString('hex')}`);
const topics = (n: number) => Array.from({ length: n }, () => `0x${randomBytes(32).toString('hex')}`);
const call = (id: number, method: string, params: unknown[]) => ({ jsonrpc: '2.0', id, method, params });

/** POST as `client` (the endpoints trust one proxy hop, so X-Forwarded-For names the client). */
async function send(url: string, body: unknown, client?: string): Promise<Reply | Reply[]> {
  const r = await post(
    url,
    typeof body === 'string' ? body : JSON.stringify(body),
    client ? { 'x-forwarded-for': client } : {},
  );
  expect(r.status).toBe(200);
  return JSON.parse(r.text) as Reply | Reply[];
}

/** Runs `fn` over `items` with at most `width` in flight. */
async function pool<T, R>(items: readonly T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

const liveRows = async (s: string) =>
  Number(((await db.client.knex(`${s}.filters`).count('* as n')) as { n: string | number }[])[0]!.n);

beforeAll(async () => {
  ({ anvil } = await chain());
  db = await openTestDb();
  schema = db.schema('rpc');
  // Two replicas on one database; caps lowered so 3,000 attempts hit both (defaults: 100 and 10,000).
  const env = { RPC_TRUSTED_PROXY_HOPS: '1', RPC_MAX_FILTERS_PER_CLIENT: '20', RPC_MAX_FILTERS: '300' };
  a = await startRpcUnderTest({ db, schema, anvil, env });
  b = await startRpcUnderTest({ db, schema, anvil, env });
});

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await anvil?.stop();
  await db?.close();
});

describe('filter caps', () => {
  it('error: 100 eth_newFilter with 22,000 addresses each are -32602 naming RPC_MAX_FILTER_ADDRESSES; eth_getLogs too; a batch of polls is answered', async () => {
    const canary = blockNumberCanary('rpc filters: huge criteria', a.url);
    const huge = JSON.stringify(call(1, 'eth_newFilter', [{ address: addresses(22_000) }]));
    expect(huge.length).toBeGreaterThan(900_000); // ~1 MB, under RPC_MAX_BODY_BYTES as in the report
    const refused = await pool(
      Array.from({ length: 100 }, (_, i) => i),
      4,
      (i) => send(i % 2 ? a.url : b.url, huge, `10.1.0.${i}`),
    );
    for (const r of refused as Reply[]) {
      expect(r.error).toMatchObject({ code: -32602, data: { cap: 'RPC_MAX_FILTER_ADDRESSES', limit: 1000 } });
      expect(r.error!.message).toBe(
        'invalid params: filter.address holds 22000 addresses; at most 1000 per filter (RPC_MAX_FILTER_ADDRESSES). Split the query.',
      );
    }
    expect(await liveRows(schema)).toBe(0);

    const logs = (await send(a.url, huge.replace('eth_newFilter', 'eth_getLogs'))) as Reply;
    expect(logs.error).toMatchObject({ code: -32602, data: { cap: 'RPC_MAX_FILTER_ADDRESSES' } });
    const position = (await send(a.url, call(2, 'eth_getLogs', [{ topics: [null, topics(1001)] }]))) as Reply;
    expect(position.error!.message).toContain(
      'filter.topics[1] holds 1001 topics; at most 1000 per position and in all positions together (RPC_MAX_FILTER_TOPICS)',
    );
    const total = (await send(
      a.url,
      call(3, 'eth_newFilter', [{ topics: [topics(400), topics(400), topics(400)] }]),
    )) as Reply;
    expect(total.error).toMatchObject({ code: -32602, data: { cap: 'RPC_MAX_FILTER_TOPICS', limit: 1000 } });
    expect(total.error!.message).toContain('filter.topics holds 1200 topics in all positions together');

    // At the caps a filter is accepted; a batch of polls over such filters (each poll an eth_getLogs with
    // 1,000 addresses and 1,000 topics) is answered, the endpoint stays up.
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = (await send(
        a.url,
        call(i, 'eth_newFilter', [{ address: addresses(1000), topics: [topics(1000)] }]),
        '10.2.0.1',
      )) as Reply;
      expect(r.error).toBeUndefined();
      ids.push(r.result as string);
    }
    await send(anvil.url, call(1, 'anvil_mine', ['0x2']));
    const polls = (await send(
      b.url,
      Array.from({ length: 100 }, (_, i) => call(i, 'eth_getFilterChanges', [ids[i % 10]!])),
    )) as Reply[];
    expect(polls).toHaveLength(100);
    expect(polls.every((p) => Array.isArray(p.result))).toBe(true);
    const unknown = (await send(
      b.url,
      Array.from({ length: 100 }, (_, i) => call(i, 'eth_getFilterChanges', [`0x${i.toString(16)}`])),
    )) as Reply[];
    expect(unknown.every((p) => p.error?.code === -32000 && p.error.message.startsWith('filter not found'))).toBe(true);
    for (const id of ids)
      expect(((await send(a.url, call(1, 'eth_uninstallFilter', [id]))) as Reply).result).toBe(true);

    const report = await canary.stop();
    expect(report.failed, report.failures.join('\n')).toBe(0);
  });

  it('error: live filters are capped per client and in total across two replicas (-32005 naming the cap); room returns on uninstall', async () => {
    const canary = blockNumberCanary('rpc filters: many clients', a.url);
    // 100 clients, each sending 30 filter creations split over both replicas at once: 3,000 attempts.
    // The first 10 alone (200 filters: only the per-client cap can refuse), then the other 90 together.
    const clients = Array.from({ length: 100 }, (_, i) => `10.3.0.${i}`);
    const outcomes = new Map<string, Reply[]>();
    const attack = async (client: string) => {
      const batch = (n: number, method = 'eth_newFilter') =>
        Array.from({ length: n }, (_, i) => call(i, method, method === 'eth_newFilter' ? [{}] : []));
      const [x, y] = await Promise.all([
        send(a.url, batch(15), client),
        send(b.url, [...batch(10), ...batch(5, 'eth_newBlockFilter')], client),
      ]);
      outcomes.set(client, [...(x as Reply[]), ...(y as Reply[])]);
    };
    await pool(clients.slice(0, 10), 8, attack);
    for (const client of clients.slice(0, 10)) {
      const errors = outcomes.get(client)!.filter((r) => r.error !== undefined);
      expect(errors).toHaveLength(10);
      expect(errors.every((r) => r.error!.code === -32005 && r.error!.data!.cap === 'RPC_MAX_FILTERS_PER_CLIENT')).toBe(
        true,
      );
    }
    await pool(clients.slice(10), 8, attack);
    let created = 0;
    const caps = new Map<string, number>();
    for (const replies of outcomes.values()) {
      const ok = replies.filter((r) => r.error === undefined).length;
      expect(ok).toBeLessThanOrEqual(20);
      created += ok;
      for (const r of replies.filter((x) => x.error)) {
        expect(r.error!.code).toBe(-32005);
        caps.set(r.error!.data!.cap!, (caps.get(r.error!.data!.cap!) ?? 0) + 1);
      }
    }
    // Exactly the total cap, although creations raced on two replicas.
    expect(created).toBe(300);
    expect(await liveRows(schema)).toBe(300);
    expect(caps.get('RPC_MAX_FILTERS_PER_CLIENT')).toBeGreaterThanOrEqual(100);
    expect(caps.get('RPC_MAX_FILTERS')).toBeGreaterThanOrEqual(3000 - 300 - caps.get('RPC_MAX_FILTERS_PER_CLIENT')!);
    expect([...caps.keys()].sort()).toEqual(['RPC_MAX_FILTERS', 'RPC_MAX_FILTERS_PER_CLIENT']);
    process.stdout.write(
      `filters: 3000 attempts from 100 clients, ${created} created, refusals ${JSON.stringify(Object.fromEntries(caps))}\n`,
    );

    const first = [...outcomes.entries()].find(([, r]) => r.filter((x) => x.error === undefined).length === 20)!;
    const perClient = (await send(a.url, call(1, 'eth_newFilter', [{}]), first[0])) as Reply;
    expect(perClient.error!.message).toBe(
      'limit exceeded: this client already has 20 live filters; at most 20 per client (RPC_MAX_FILTERS_PER_CLIENT). Uninstall filters with eth_uninstallFilter or let them expire (RPC_FILTER_TTL_SECONDS: 300 s without a poll).',
    );
    const fresh = (await send(b.url, call(1, 'eth_newBlockFilter', []), '10.4.0.1')) as Reply;
    expect(fresh.error!.message).toBe(
      'limit exceeded: the endpoint holds 300 live filters, at most 300 in all (RPC_MAX_FILTERS). Retry after filters expire (RPC_FILTER_TTL_SECONDS: 300 s without a poll).',
    );

    // Uninstalling one of its filters (on the other replica) gives that client room again, and only it.
    const mine = first[1].find((r) => r.error === undefined)!.result as string;
    expect(((await send(b.url, call(1, 'eth_uninstallFilter', [mine]), first[0])) as Reply).result).toBe(true);
    expect(((await send(a.url, call(1, 'eth_newFilter', [{}]), first[0])) as Reply).result).toMatch(
      /^0x([1-9a-f][0-9a-f]{0,31}|0)$/,
    ); // a Quantity (filters/store.ts)
    expect(((await send(a.url, call(1, 'eth_newFilter', [{}]), first[0])) as Reply).error!.data!.cap).toBe(
      'RPC_MAX_FILTERS_PER_CLIENT',
    );
    await db.client.knex(`${schema}.filters`).delete();

    const report = await canary.stop();
    expect(report.failed, report.failures.join('\n')).toBe(0);
  });
});

describe('filter expiry', () => {
  it('behavior: rounds of large filters with expiry between leave no memory behind (RSS printed per round)', async () => {
    const s = db.schema('rpc_expiry');
    const rpc = await startRpcUnderTest({
      db,
      schema: s,
      anvil,
      env: { RPC_TRUSTED_PROXY_HOPS: '1', RPC_FILTER_TTL_SECONDS: '1' },
    });
    const canary = blockNumberCanary('rpc filters: expiry rounds', rpc.url);
    // Lets the JS heap be collected before each reading, so RSS shows what stays, not garbage not yet freed.
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    // Per round: 400 filters at the caps (1,000 addresses + 1,000 topics, ~115 kB of JSON each, 46 MB), from
    // 4 clients of 100 (RPC_MAX_FILTERS_PER_CLIENT), in batches of 8 to stay under RPC_MAX_BODY_BYTES.
    const criteria = { address: addresses(1000), topics: [topics(1000)] };
    const body = JSON.stringify(Array.from({ length: 8 }, (_, i) => call(i, 'eth_newFilter', [criteria])));
    const roundMiB = Math.round((400 * JSON.stringify(criteria).length) / 1048576);
    const rss: number[] = [];
    const stored: { table: number; wal: number }[] = [];
    let ids: string[] = [];
    for (let round = 0; round < 4; round++) {
      const batches = Array.from({ length: 50 }, (_, i) => `10.5.${round}.${i % 4}`);
      const replies = (await pool(batches, 2, (client) => send(rpc.url, body, client))).flat() as Reply[];
      expect(replies.filter((r) => r.error !== undefined)).toEqual([]);
      ids = replies.map((r) => r.result as string);
      // Nobody polls: after RPC_FILTER_TTL_SECONDS the sweeper deletes them (and on PGlite vacuums).
      for (let i = 0; i < 100 && (await liveRows(s)) > 0; i++) await new Promise((r) => setTimeout(r, 200));
      expect(await liveRows(s)).toBe(0);
      await new Promise((r) => setTimeout(r, 300)); // the VACUUM/CHECKPOINT after the delete
      gc();
      rss.push(rssMiB());
      if (db.client.kind === 'pglite') {
        const { rows } = (await db.client.knex.raw(
          `select pg_total_relation_size('${s}.filters')::int8 as t, (select sum(size) from pg_ls_waldir())::int8 as w`,
        )) as { rows: { t: string; w: string }[] };
        stored.push({ table: Number(rows[0]!.t), wal: Number(rows[0]!.w) });
      }
      const size = stored[round];
      const sizes = size
        ? `, table ${Math.round(size.table / 1024)} KiB, WAL ${Math.round(size.wal / 1048576)} MiB`
        : '';
      process.stdout.write(
        `filters expiry round ${round + 1}: ${roundMiB} MiB of criteria stored and expired, RSS ${rss[round]} MiB${sizes}\n`,
      );
    }
    expect(((await send(rpc.url, call(1, 'eth_getFilterChanges', [ids[0]!]))) as Reply).error!.message).toMatch(
      /^filter not found/,
    );
    // Criteria are stored as they are, not run through pglz first (migration 006: half the insert's CPU on PGlite).
    const storage = (await db.client.knex.raw(
      `select attstorage from pg_attribute where attrelid = '${s}.filters'::regclass and attname = 'criteria'`,
    )) as { rows: { attstorage: string }[] };
    expect(storage.rows[0]!.attstorage).toBe('e');
    // The cause, measured directly: embedded PGlite has no autovacuum and no checkpointer, so without the
    // sweeper's VACUUM and CHECKPOINT the table kept every expired row's space and the WAL every round
    // (+200 MiB per 100 MB of rows, measured). Now both stay where the first round left them.
    if (stored.length > 0) {
      expect(stored[3]!.table).toBeLessThan(stored[0]!.table + (roundMiB * 1048576) / 10);
      expect(stored[3]!.wal).toBeLessThanOrEqual(stored[0]!.wal + 16 * 1048576); // one WAL segment
    }
    // RSS: the only growth left after round 1 is PGlite's buffer pool being touched for the first time
    // (shared_buffers, 128 MiB, once; seen +0 to +125 MiB). Unfixed, three more rounds added about twice
    // their criteria each (~260 MiB here); the bound sits between the two.
    const growth = rss[3]! - rss[0]!;
    const bound = 128 + roundMiB;
    process.stdout.write(
      `filters expiry: RSS growth after round 1: ${growth} MiB (bound ${bound} MiB, ${databaseKind()})\n`,
    );
    expect(growth).toBeLessThan(bound);

    const report = await canary.stop();
    await rpc.stop();
    expect(report.failed, report.failures.join('\n')).toBe(0);
  });
});
