import { passThrough } from '../context.js';

/**
 * eth_getStorageAt: answered by the upstream node as it is (params validated against the spec first; the block defaults
 * to latest).
 */
export default passThrough('eth_getStorageAt', { blockAt: 2 });
