import { passThrough } from '../context.js';

/**
 * eth_getUncleCountByBlockHash: answered by the upstream node as it is (a proof-of-stake chain has no uncles: 0 or
 * null).
 */
export default passThrough('eth_getUncleCountByBlockHash');
