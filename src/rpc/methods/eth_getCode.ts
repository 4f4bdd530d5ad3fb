import { passThrough } from '../context.js';

/**
 * eth_getCode: answered by the upstream node as it is (params validated against the spec first; the block defaults to
 * latest).
 */
export default passThrough('eth_getCode', { blockAt: 1 });
