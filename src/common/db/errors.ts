import { BaseError, RetryableError } from '../errors.js';

/** A constraint the data broke (unique, foreign key, check): trying again will not help. */
export class ConstraintViolationError extends BaseError {
  override name = 'ConstraintViolationError';
  constructor(
    message: string,
    readonly constraint: string | undefined,
    readonly kind: 'unique' | 'foreign_key' | 'check' | 'not_null' | 'other',
    cause: unknown,
  ) {
    super(message, { cause });
  }
}

/**
 * The database cannot be reached (refused, reset, timed out, shutting down, out of connections): retryable, and
 * what an HTTP API answers with 503 naming the database, not a 500 (src/common/http/problem.ts).
 */
export class DatabaseUnavailableError extends RetryableError {
  override name = 'DatabaseUnavailableError';
}

/** SQLSTATE of each integrity constraint kind (23xxx); any other 23xxx is 'other'. */
const CONSTRAINTS: Record<string, ConstraintViolationError['kind']> = {
  '23505': 'unique',
  '23503': 'foreign_key',
  '23514': 'check',
  '23502': 'not_null',
};

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Maps a driver error to our classes once, so callers decide on retry by class, not by driver codes.
 * SQLSTATE classes: 08 connection exception, 57P01..03 server shutting down, 40001 serialization failure,
 * 40P01 deadlock, 53300 too many connections, 23xxx integrity constraints.
 */
export function classifyDbError(err: unknown): unknown {
  if (err instanceof BaseError) return err;
  const e = err as { code?: unknown; constraint?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const constraint = typeof e?.constraint === 'string' ? e.constraint : undefined;
  if (code === undefined) {
    if (
      /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Timeout acquiring a connection/i.test(
        message,
      )
    ) {
      return new DatabaseUnavailableError(`database connection lost: ${message}`, { cause: err });
    }
    return err;
  }
  if (CONNECTION_CODES.has(code) || code.startsWith('08') || ['57P01', '57P02', '57P03', '53300'].includes(code)) {
    return new DatabaseUnavailableError(`database temporarily unavailable (${code}): ${message}`, { cause: err });
  }
  if (['40001', '40P01'].includes(code))
    return new RetryableError(`database transaction conflict (${code}): ${message}`, { cause: err });
  if (code.startsWith('23'))
    return new ConstraintViolationError(message, constraint, CONSTRAINTS[code] ?? 'other', err);
  return err;
}
