import { userOperationMethod } from '../bundler.js';

/**
 * eth_sendUserOperation: refused when sent to the canonical EntryPoint of the other version, else forwarded to the
 * ERC-4337 bundler (RPC_BUNDLER_URL).
 */
export default userOperationMethod('eth_sendUserOperation');
