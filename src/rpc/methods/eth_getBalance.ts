import { passThrough } from '../context.js';

/**
 * eth_getBalance: answered by the upstream node as it is (params validated against the spec first; the block defaults
 * to latest).
 */
export default passThrough('eth_getBalance', { blockAt: 1 });
