import { bundlerMethod } from '../bundler.js';

/** eth_getUserOperationReceipt: forwarded to the ERC-4337 bundler (RPC_BUNDLER_URL). */
export default bundlerMethod('eth_getUserOperationReceipt');
