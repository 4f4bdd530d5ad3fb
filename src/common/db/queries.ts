import type { Knex } from 'knex';
import { classifyDbError, ConstraintViolationError, DatabaseUnavailableError } from './errors.js';
import { RetryableError } from '../errors.js';
import { sleep } from '../shutdown.js';
import { counter, histogram, type Counter, type Histogram, type Registry } from '../metrics.js';

/**
 * The one way code reaches the database: every query has a label (`area.what`, e.g. `relayer.claimable`),
 * a duration histogram and an error counter per label, driver errors mapped once (errors.ts), and retries
 * with backoff when the failure is retryable (connection lost, serialization failure). A retried `fn` runs
 * again from the start, so it must be safe to repeat: a read, a transaction, or an idempotent write
 * (upsert, update to a fixed value). A one-shot non-idempotent statement passes `retries: 0`.
 */
export interface QueryOptions {
  /** Retries after a retryable failure (default 3, backoff 100 ms doubling up to 2 s). */
  retries?: number;
  signal?: AbortSignal;
}

export interface Queries {
  query<T>(label: string, fn: (knex: Knex) => Promise<T>, options?: QueryOptions): Promise<T>;
  /** `fn` inside one transaction; a retry runs a new transaction from the start. */
  transaction<T>(label: string, fn: (trx: Knex.Transaction) => Promise<T>, options?: QueryOptions): Promise<T>;
  /** Registers the query metrics in `registry` (once per process; later calls are no-ops). */
  instrument(registry: Registry): void;
}

interface QueryMetrics {
  seconds: Histogram<'label'>;
  errors: Counter<'label' | 'error'>;
  retries: Counter<'label'>;
}

/** A label is a metric label value: bounded set, written in code, never built from input. */
const LABEL = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/;

function errorKind(err: unknown): string {
  if (err instanceof DatabaseUnavailableError) return 'unavailable';
  if (err instanceof ConstraintViolationError) return 'constraint';
  if (err instanceof RetryableError) return 'conflict';
  return 'other';
}

export function createQueries(knex: Knex): Queries {
  let metrics: QueryMetrics | undefined;
  // Labels are constants in code: each is checked once, not on every query of a hot path (proof reads).
  const checked = new Set<string>();

  const query: Queries['query'] = async (label, fn, { retries = 3, signal } = {}) => {
    if (!checked.has(label)) {
      if (!LABEL.test(label))
        throw new Error(`database query label "${label}" is not of the form area.what (lowercase, dots)`);
      checked.add(label);
    }
    const end = metrics?.seconds.startTimer({ label });
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          return await fn(knex);
        } catch (err) {
          const classified = classifyDbError(err);
          if (!(classified instanceof RetryableError) || attempt >= retries || signal?.aborted) {
            metrics?.errors.inc({ label, error: errorKind(classified) });
            throw classified;
          }
          metrics?.retries.inc({ label });
          await sleep(Math.min(100 * 2 ** attempt, 2_000), signal);
        }
      }
    } finally {
      end?.();
    }
  };

  return {
    query,
    transaction: (label, fn, options) => query(label, (k) => k.transaction(fn), options),
    instrument(registry) {
      metrics ??= {
        seconds: histogram(registry, 'l2stack_db_query_seconds', 'Database query time by label (retries included)', [
          'label',
        ]),
        errors: counter(
          registry,
          'l2stack_db_query_errors_total',
          'Database queries that failed by label and error kind (unavailable, conflict, constraint, other)',
          ['label', 'error'],
        ),
        retries: counter(
          registry,
          'l2stack_db_query_retries_total',
          'Database query attempts retried after a retryable failure, by label',
          ['label'],
        ),
      };
    },
  };
}
