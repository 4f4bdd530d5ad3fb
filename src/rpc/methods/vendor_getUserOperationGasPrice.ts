import { bundlerMethod } from '../bundler.js';

/**
 * vendor_getUserOperationGasPrice: forwarded to the ERC-4337 bundler (RPC_BUNDLER_URL) as
 * ${RPC_BUNDLER_VENDOR_PREFIX}getUserOperationGasPrice.
 */
export default bundlerMethod('vendor_getUserOperationGasPrice');
