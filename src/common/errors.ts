/**
 * One error base for the whole project (after viem's BaseError): a short message for humans, optional
 * details, and a cause chain that `walk` can search. Transport layers map these to problem+json or
 * JSON-RPC errors in exactly one place each (src/common/http/problem.ts, src/rpc/).
 */
export interface BaseErrorOptions {
  cause?: unknown;
  details?: string;
  /** Extra machine-readable fields (for problem+json extensions or JSON-RPC `data`). */
  meta?: Record<string, unknown>;
}

export class BaseError extends Error {
  override name = 'BaseError';
  readonly shortMessage: string;
  readonly details: string | undefined;
  readonly meta: Record<string, unknown> | undefined;

  constructor(shortMessage: string, options: BaseErrorOptions = {}) {
    super(options.details ? `${shortMessage}\n\nDetails: ${options.details}` : shortMessage, { cause: options.cause });
    this.shortMessage = shortMessage;
    this.details = options.details;
    this.meta = options.meta;
  }

  /** Returns the first error in the cause chain (this one included) that matches, or the last one. */
  walk(predicate?: (err: unknown) => boolean): unknown {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the walk starts at this error
    let current: unknown = this;
    for (;;) {
      if (predicate?.(current)) return current;
      const next = current instanceof Error ? current.cause : undefined;
      if (next === undefined) return predicate ? undefined : current;
      current = next;
    }
  }
}

/** An operation that may succeed when tried again (connection loss, serialization failure, timeout). */
export class RetryableError extends BaseError {
  override name = 'RetryableError';
}

/** An HTTP-facing error: becomes an RFC 9457 problem with this status. */
export class HttpError extends BaseError {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    readonly title: string,
    detail: string,
    options: BaseErrorOptions = {},
  ) {
    super(detail, options);
  }
}

export const badRequest = (detail: string, meta?: Record<string, unknown>) =>
  new HttpError(400, 'Bad Request', detail, { meta });
export const notFound = (detail: string) => new HttpError(404, 'Not Found', detail);

/** JSON-RPC 2.0 error with its code (the codes viem and the execution-apis use). */
export class RpcError extends BaseError {
  override name = 'RpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
    options: BaseErrorOptions = {},
  ) {
    super(message, options);
  }
}

export const RpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  Internal: -32603,
  /** Generic server error: execution reverted, resource unavailable, filter not found. */
  Server: -32000,
  /** Limit exceeded: rate limits, block-range and result caps. */
  LimitExceeded: -32005,
} as const;

export const rpcErrors = {
  methodNotFound: (method: string) =>
    new RpcError(RpcErrorCode.MethodNotFound, `the method ${method} does not exist/is not available`),
  invalidParams: (detail: string, data?: unknown) =>
    new RpcError(RpcErrorCode.InvalidParams, `Invalid params: ${detail}`, data),
  limitExceeded: (detail: string, data?: unknown) => new RpcError(RpcErrorCode.LimitExceeded, detail, data),
};

export function errorMessage(err: unknown): string {
  if (err instanceof BaseError) return err.shortMessage;
  if (err instanceof Error) return err.message;
  return String(err);
}
