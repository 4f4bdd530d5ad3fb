import { passThrough } from '../context.js';

/** web3_clientVersion: answered by the upstream node as it is (params validated against the spec first). */
export default passThrough('web3_clientVersion');
