import { bundlerMethod } from '../bundler.js';

/**
 * vendor_getUserOperationStatus: forwarded to the ERC-4337 bundler (RPC_BUNDLER_URL) as
 * ${RPC_BUNDLER_VENDOR_PREFIX}getUserOperationStatus.
 */
export default bundlerMethod('vendor_getUserOperationStatus');
