import { passThrough } from '../context.js';

/** eth_blobBaseFee: answered by the upstream node as it is (uncached: it moves with every block). */
export default passThrough('eth_blobBaseFee');
