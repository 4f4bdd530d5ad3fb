import { BaseError, RpcError, RpcErrorCode, errorMessage } from '../common/errors.js';

/** Codes this endpoint uses beyond the standard ones (see docs/rpc.md). */
export const RpcCodes = {
  ...RpcErrorCode,
  /** execution-apis "resource unavailable": no upstream node could answer. */
  ResourceUnavailable: -32002,
  /** A reverted call: data carries the revert data. */
  ExecutionReverted: 3,
} as const;

/** A JSON-RPC error object as it goes on the wire. */
export interface WireError {
  code: number;
  message: string;
  data?: unknown;
}

/** The one place where any thrown value becomes a JSON-RPC error object. */
export function toWireError(err: unknown): WireError {
  if (err instanceof RpcError)
    return err.data === undefined
      ? { code: err.code, message: err.message }
      : { code: err.code, message: err.message, data: err.data };
  return { code: RpcCodes.Internal, message: `internal error: ${errorMessage(err)}` };
}

export const filterNotFound = (id: string) =>
  new RpcError(
    RpcCodes.Server,
    `filter not found: ${id} (unknown, uninstalled, or not polled for longer than its time-to-live)`,
  );

export const upstreamUnavailable = (detail: string, data?: unknown) =>
  new RpcError(RpcCodes.ResourceUnavailable, `no upstream node is available: ${detail}`, data);

/** A transport failure talking to an upstream (not a JSON-RPC error answer). */
export class UpstreamTransportError extends BaseError {
  override name = 'UpstreamTransportError';
  constructor(
    message: string,
    /** True when the request may have reached the node (sent, then timeout/reset/5xx): never resend a write. */
    readonly ambiguous: boolean,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
  }
}
