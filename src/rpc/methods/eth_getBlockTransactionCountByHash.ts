import { passThrough } from '../context.js';

/**
 * eth_getBlockTransactionCountByHash: answered by the upstream node as it is (params validated against the spec first).
 */
export default passThrough('eth_getBlockTransactionCountByHash');
