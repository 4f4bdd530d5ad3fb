import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb, databaseKind } from '../helpers/db.js';
import { migrate, type Migration } from '../../src/common/db/migrations.js';
import { createDbClient } from '../../src/common/db/client.js';
import { ConstraintViolationError, classifyDbError } from '../../src/common/db/errors.js';
import { RetryableError } from '../../src/common/errors.js';

const migrations: Migration[] = [
  {
    name: '001_samples',
    async up(knex, schema) {
      await knex.schema.withSchema(schema).createTable('samples', (t) => {
        t.bigIncrements('id');
        t.bigInteger('block_number').notNullable();
        t.specificType('wei', 'numeric(78,0)').notNullable();
        t.jsonb('payload').notNullable();
        t.timestamp('seen_at', { useTz: true }).notNullable();
        t.string('hash').notNullable().unique();
      });
    },
  },
  {
    name: '002_samples_note',
    async up(knex, schema) {
      await knex.schema.withSchema(schema).alterTable('samples', (t) => t.text('note'));
    },
  },
];

let db: Awaited<ReturnType<typeof openTestDb>>;
let schema: string;

beforeAll(async () => {
  db = await openTestDb();
  schema = db.schema('kernel');
});
afterAll(async () => db?.close());

describe(`db on ${databaseKind()}`, () => {
  it('behavior: migrations run once in their own schema', async () => {
    expect(await migrate(db.client.knex, schema, migrations)).toEqual(['001_samples', '002_samples_note']);
    expect(await migrate(db.client.knex, schema, migrations)).toEqual([]);
    const tables = await db.client
      .knex('information_schema.tables')
      .where({ table_schema: schema })
      .pluck('table_name');
    expect(tables.sort()).toEqual(['knex_migrations', 'knex_migrations_lock', 'samples']);
  });

  it('behavior: a migration added later is applied; one applied but no longer listed is refused (the up-to-date shortcut decides neither)', async () => {
    const other = db.schema('kernel_later');
    expect(await migrate(db.client.knex, other, migrations.slice(0, 1))).toEqual(['001_samples']);
    expect(await migrate(db.client.knex, other, migrations)).toEqual(['002_samples_note']);
    await expect(migrate(db.client.knex, other, migrations.slice(0, 1))).rejects.toThrow(/002_samples_note/);
  });

  it('behavior: processes migrating one new schema at once (replicas starting together) all succeed, one at a time, leaving one lock row', async () => {
    const fresh = db.schema('kernel_together');
    // Each its own pool, as separate processes are (on PGlite one client: it has one connection, and one process).
    const clients =
      db.client.kind === 'postgres'
        ? await Promise.all(Array.from({ length: 4 }, () => createDbClient(db.client.config)))
        : Array.from({ length: 4 }, () => db.client);
    try {
      const applied = await Promise.all(clients.map((c) => migrate(c.knex, fresh, migrations)));
      // Exactly one of them applied both migrations; the others found them applied.
      expect(applied.map((a) => a.length).sort()).toEqual([0, 0, 0, 2]);
    } finally {
      if (db.client.kind === 'postgres') await Promise.all(clients.map((c) => c.close()));
    }
    expect(await db.client.knex.withSchema(fresh).select('is_locked').from('knex_migrations_lock')).toEqual([
      { is_locked: 0 },
    ]);
  });

  it("behavior: a lock table left with two rows (the race of knex's own check-then-insert) or locked by a migrator that died does not stop the next start", async () => {
    for (const damage of [
      'insert into ??.knex_migrations_lock (is_locked) values (0)',
      'update ??.knex_migrations_lock set is_locked = 1',
    ]) {
      const s = db.schema(`kernel_damaged_${damage.split(' ')[0]}`);
      expect(await migrate(db.client.knex, s, migrations.slice(0, 1))).toEqual(['001_samples']);
      await db.client.knex.raw(damage, [s]);
      expect(await migrate(db.client.knex, s, migrations)).toEqual(['002_samples_note']);
      expect(await db.client.knex.withSchema(s).select('is_locked').from('knex_migrations_lock')).toEqual([
        { is_locked: 0 },
      ]);
    }
  });

  it.skipIf(databaseKind() !== 'postgres')(
    'error: a start that waits past its bound for another process migrating the schema fails naming the wait',
    async () => {
      const s = db.schema('kernel_waiting');
      const other = await createDbClient(db.client.config, { poolMax: 1 });
      try {
        // Another process in the middle of migrating the same schema: it holds the schema's advisory lock.
        await other.knex.transaction(async (trx) => {
          await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`l2stack migrate ${s}`]);
          await expect(migrate(db.client.knex, s, migrations, { lockWaitMs: 300 })).rejects.toThrow(
            `migrating schema "${s}": waited 0.3 s for a lock another process holds`,
          );
        });
        expect(await migrate(db.client.knex, s, migrations)).toEqual(['001_samples', '002_samples_note']);
      } finally {
        await other.close();
      }
    },
  );

  it('behavior: int8, numeric(78,0), jsonb and timestamptz round-trip exactly', async () => {
    const maxUint256 = (2n ** 256n - 1n).toString();
    const seenAt = new Date('2026-11-21T10:15:30.123Z');
    await db.client.knex
      .withSchema(schema)
      .table('samples')
      .insert({
        block_number: '9007199254740993', // 2^53 + 1: must not pass through a float
        wei: maxUint256,
        payload: JSON.stringify({ nested: { list: [1, 'two'] } }),
        seen_at: seenAt,
        hash: '0xaa',
      });
    const row = await db.client.knex.withSchema(schema).table('samples').where({ hash: '0xaa' }).first();
    expect(row.id).toBe('1');
    expect(row.block_number).toBe('9007199254740993');
    expect(row.wei).toBe(maxUint256);
    expect(row.payload).toEqual({ nested: { list: [1, 'two'] } });
    expect(row.seen_at).toBeInstanceOf(Date);
    expect((row.seen_at as Date).toISOString()).toBe(seenAt.toISOString());
    const sum = await db.client.knex.withSchema(schema).table('samples').sum({ total: 'wei' }).first();
    expect(sum?.total).toBe(maxUint256);
  });

  it('error: a unique violation is classified, not retried', async () => {
    const insert = () =>
      db.client.query('test.db', (knex) =>
        knex
          .withSchema(schema)
          .table('samples')
          .insert({ block_number: 1, wei: '1', payload: '{}', seen_at: new Date(), hash: '0xbb' }),
      );
    await insert();
    const err = await insert().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConstraintViolationError);
    expect((err as ConstraintViolationError).kind).toBe('unique');
  });

  it('error: connection failures are retryable', () => {
    expect(
      classifyDbError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })),
    ).toBeInstanceOf(RetryableError);
    expect(classifyDbError(Object.assign(new Error('terminating connection'), { code: '57P01' }))).toBeInstanceOf(
      RetryableError,
    );
    expect(classifyDbError(Object.assign(new Error('syntax'), { code: '42601' }))).not.toBeInstanceOf(RetryableError);
  });

  it('error: an invalid schema name is refused before any SQL runs', async () => {
    await expect(migrate(db.client.knex, 'bad;name', migrations)).rejects.toThrow('invalid schema name "bad;name"');
  });
});
