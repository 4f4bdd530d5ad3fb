import { passThrough } from '../context.js';

/**
 * eth_getTransactionCount: answered by the upstream node as it is (params validated against the spec first; the block
 * defaults to latest).
 */
export default passThrough('eth_getTransactionCount', { blockAt: 1 });
