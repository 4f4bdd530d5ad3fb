import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { createMetrics, type Registry } from '../../src/common/metrics.js';
import { ConstraintViolationError } from '../../src/common/db/errors.js';
import { RetryableError } from '../../src/common/errors.js';

/** The labelled query wrapper (src/common/db/queries.ts) on the real database of the pass. */
let db: Awaited<ReturnType<typeof openTestDb>>;
let metrics: Registry;
let table: string;

beforeAll(async () => {
  db = await openTestDb();
  metrics = createMetrics({ defaultMetrics: false });
  db.client.instrument(metrics);
  const schema = db.schema('queries');
  table = `${schema}.items`;
  await db.client.query('test.create', async (knex) => {
    await knex.raw('create schema if not exists ??', [schema]);
    await knex.schema.withSchema(schema).createTable('items', (t) => t.integer('id').primary());
  });
});

afterAll(async () => {
  await db?.close();
});

async function sample(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = (await metrics.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as { value: number; labels: Record<string, string>; metricName?: string }[];
  return values.find(
    (v) =>
      Object.entries(labels).every(([k, l]) => v.labels[k] === l) &&
      (v.metricName === undefined || v.metricName === name || v.metricName === `${name}_count`),
  )?.value;
}

describe('labelled database queries', () => {
  it('times every query under its label', async () => {
    await db.client.query('test.insert', (knex) => knex(table).insert({ id: 1 }));
    await db.client.query('test.insert', (knex) => knex(table).insert({ id: 2 }));
    const rows = await db.client.query('test.read', (knex) => knex(table).select('id').orderBy('id'));
    expect(rows.map((r: { id: number }) => r.id)).toEqual([1, 2]);
    expect(await sample('l2stack_db_query_seconds', { label: 'test.insert' })).toBe(2);
    expect(await sample('l2stack_db_query_seconds', { label: 'test.read' })).toBe(1);
  });

  it('maps a driver error once and counts it under its label and kind, without retrying it', async () => {
    let attempts = 0;
    const failing = db.client.query('test.duplicate', (knex) => {
      attempts++;
      return knex(table).insert({ id: 1 });
    });
    await expect(failing).rejects.toBeInstanceOf(ConstraintViolationError);
    expect(attempts).toBe(1);
    expect(await sample('l2stack_db_query_errors_total', { label: 'test.duplicate', error: 'constraint' })).toBe(1);
  });

  it('runs a transaction whole or not at all', async () => {
    const failing = db.client.transaction('test.pair', async (trx) => {
      await trx(table).insert({ id: 10 });
      await trx(table).insert({ id: 1 }); // a duplicate: the whole transaction rolls back
    });
    await expect(failing).rejects.toBeInstanceOf(ConstraintViolationError);
    expect(await db.client.query('test.read', (knex) => knex(table).where({ id: 10 }).first())).toBeUndefined();
  });

  it('retries a retryable failure with backoff and counts the retries', async () => {
    let attempts = 0;
    const value = await db.client.query('test.flaky', async (knex) => {
      attempts++;
      if (attempts < 3) throw new RetryableError('serialization failure (as the driver maps 40001)');
      return (await knex.raw('select 1 as one')) as unknown;
    });
    expect(value).toBeDefined();
    expect(attempts).toBe(3);
    expect(await sample('l2stack_db_query_retries_total', { label: 'test.flaky' })).toBe(2);
  });

  it('refuses a label that is not area.what, before touching the database', async () => {
    let ran = false;
    await expect(
      db.client.query('Tokens for 0xabc', async () => {
        ran = true;
      }),
    ).rejects.toThrow('database query label "Tokens for 0xabc" is not of the form area.what');
    expect(ran).toBe(false);
  });
});
