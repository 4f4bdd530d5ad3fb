import { bundlerMethod, userOperationMethod } from '../bundler.js';

/*
 * The ERC-4337 methods, one line each: forwarded to the bundler (RPC_BUNDLER_URL), or -32601 saying no bundler is
 * configured (bundler.ts).
 */

export const eth_supportedEntryPoints = bundlerMethod('eth_supportedEntryPoints');
export const eth_getUserOperationByHash = bundlerMethod('eth_getUserOperationByHash');
export const eth_getUserOperationReceipt = bundlerMethod('eth_getUserOperationReceipt');

// Refused when sent to the canonical EntryPoint of the other version, else forwarded.
export const eth_sendUserOperation = userOperationMethod('eth_sendUserOperation');
export const eth_estimateUserOperationGas = userOperationMethod('eth_estimateUserOperationGas');

// Forwarded as ${RPC_BUNDLER_VENDOR_PREFIX}getUserOperationGasPrice and …Status.
export const vendor_getUserOperationGasPrice = bundlerMethod('vendor_getUserOperationGasPrice');
export const vendor_getUserOperationStatus = bundlerMethod('vendor_getUserOperationStatus');
