import { RpcError } from '../common/errors.js';
import type { Address, RpcMethodName, UserOperation, UserOperationToEstimate } from '../../generated/rpc/methods.js';
import { defineMethod, type MethodParams, type MethodResult, type RpcMethod } from './context.js';
import { RpcCodes, UpstreamTransportError } from './errors.js';
import { JsonRpcHttpClient } from './upstream/client.js';

/**
 * The ERC-4337 bundler behind the endpoint (RPC_BUNDLER_URL). Methods are forwarded with the same params;
 * the neutral vendor_ prefix becomes the bundler vendor's (RPC_BUNDLER_VENDOR_PREFIX, e.g. pimlico_ for
 * Alto, the bundler `l2stack dev` runs), so another vendor's bundler needs a variable, not code. A bundler
 * that cannot be reached (refused, timed out, answering something that is not JSON-RPC) is -32002 naming
 * the bundler; its own JSON-RPC errors (AA codes of ERC-4337 validation) pass through with code and data.
 */
export class BundlerClient {
  private readonly client: JsonRpcHttpClient;

  constructor(url: string, private readonly vendorPrefix: string, timeoutMs: number) {
    this.client = new JsonRpcHttpClient(url, timeoutMs);
  }

  /** The method name as the bundler knows it. */
  rename(method: string): string {
    return method.startsWith('vendor_') ? `${this.vendorPrefix}${method.slice('vendor_'.length)}` : method;
  }

  /** The bundler's answer, typed as the spec's result: the bundler is trusted to answer ERC-4337's shapes, as the node is for standard methods. */
  async forward<N extends RpcMethodName>(method: N, params: MethodParams<N>): Promise<MethodResult<N>> {
    let response;
    try {
      response = await this.client.call(this.rename(method), params, { batch: false });
    } catch (err) {
      // The caller learns which service is missing and why, never the bundler's address.
      if (err instanceof UpstreamTransportError) throw new RpcError(RpcCodes.ResourceUnavailable, `the ERC-4337 bundler is not available: ${err.message.replace(/^upstream /, '')}`);
      throw err;
    }
    if (response.error) {
      // Alto answers an exception of its own (not a validation result) as an error without a code: it is still
      // the bundler's failure, so the caller gets -32603 with its message rather than an invalid error object.
      const { code, message, data } = response.error as { code?: unknown; message?: unknown; data?: unknown };
      if (typeof code !== 'number' || !Number.isInteger(code)) throw new RpcError(RpcCodes.Internal, `the ERC-4337 bundler failed: ${String(message)}`, data);
      throw new RpcError(code, String(message), data);
    }
    return (response.result ?? null) as MethodResult<N>;
  }

  close(): void {
    this.client.close();
  }
}

export const bundlerNotConfigured = (method: string) =>
  new RpcError(RpcCodes.MethodNotFound, `Method not available: no bundler is configured; ${method} needs an ERC-4337 bundler (RPC_BUNDLER_URL)`);

/** A bundler method: forwarded, or -32601 saying no bundler is configured. */
export const bundlerMethod = <N extends RpcMethodName>(name: N): RpcMethod =>
  defineMethod(name, (ctx, params) => {
    if (!ctx.bundler) throw bundlerNotConfigured(name);
    return ctx.bundler.forward(name, params);
  });

/** The canonical EntryPoint addresses (the same on every chain) by version. */
export const CANONICAL_ENTRY_POINTS = {
  '0.6': '0x5ff137d4b0fdcd49dca30c7cf57e578a026d2789',
  '0.7': '0x0000000071727de22e5e9d8baf0edac6f37da032',
} as const;

/** The EntryPoint version an operation's shape is for: the spec's oneOf tells them apart by initCode. */
export const userOperationVersion = (op: UserOperation | UserOperationToEstimate): '0.6' | '0.7' => ('initCode' in op ? '0.6' : '0.7');

/**
 * An operation sent to the canonical EntryPoint of the other version is refused here: the bundler would run
 * the wrong version's simulation and answer with an error that hides the cause. EntryPoints at other
 * addresses (the devnet's, deployed by CREATE2) are the bundler's to judge.
 */
export function checkEntryPointVersion(op: UserOperation | UserOperationToEstimate, entryPoint: Address): void {
  const version = userOperationVersion(op);
  const other = version === '0.6' ? '0.7' : '0.6';
  if (entryPoint.toLowerCase() !== CANONICAL_ENTRY_POINTS[other]) return;
  const shape = version === '0.6' ? 'initCode, paymasterAndData' : 'factory/factoryData, paymaster fields';
  throw new RpcError(
    RpcCodes.InvalidParams,
    `invalid params: param 1 (entryPoint): ${entryPoint} is the EntryPoint v${other} and the user operation has the v${version} shape (${shape}); send it to a v${version} EntryPoint (eth_supportedEntryPoints)`,
    { param: 'entryPoint', index: 1, path: 'entryPoint' },
  );
}

/** eth_sendUserOperation and eth_estimateUserOperationGas: the operation's version checked against the EntryPoint, then forwarded. */
export const userOperationMethod = (name: 'eth_sendUserOperation' | 'eth_estimateUserOperationGas'): RpcMethod =>
  defineMethod(name, (ctx, params) => {
    if (!ctx.bundler) throw bundlerNotConfigured(name);
    checkEntryPointVersion(params[0], params[1]);
    return ctx.bundler.forward(name, params);
  });
