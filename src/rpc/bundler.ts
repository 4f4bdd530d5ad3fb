import { RpcError } from '../common/errors.js';
import type { Address, RpcMethodName, UserOperation, UserOperationToEstimate } from '../../generated/rpc/methods.js';
import { defineMethod, type RpcMethod } from './context.js';
import { RpcCodes } from './errors.js';

/*
 * The ERC-4337 methods as handlers (the client that forwards them is upstream/bundler-client.ts).
 */

const bundlerNotConfigured = (method: string) =>
  new RpcError(
    RpcCodes.MethodNotFound,
    `Method not available: no bundler is configured; ${method} needs an ERC-4337 bundler (RPC_BUNDLER_URL)`,
  );

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
const userOperationVersion = (op: UserOperation | UserOperationToEstimate): '0.6' | '0.7' =>
  'initCode' in op ? '0.6' : '0.7';

/**
 * An operation sent to the canonical EntryPoint of the other version is refused here: the bundler would run
 * the wrong version's simulation and answer with an error that hides the cause. EntryPoints at other
 * addresses (the devnet's, deployed by CREATE2) are the bundler's to judge.
 */
function checkEntryPointVersion(op: UserOperation | UserOperationToEstimate, entryPoint: Address): void {
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

/**
 * eth_sendUserOperation and eth_estimateUserOperationGas: the operation's version checked against the EntryPoint, then
 * forwarded.
 */
export const userOperationMethod = (name: 'eth_sendUserOperation' | 'eth_estimateUserOperationGas'): RpcMethod =>
  defineMethod(name, (ctx, params) => {
    if (!ctx.bundler) throw bundlerNotConfigured(name);
    checkEntryPointVersion(params[0], params[1]);
    return ctx.bundler.forward(name, params);
  });
