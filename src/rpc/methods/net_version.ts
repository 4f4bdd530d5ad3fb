import { passThrough } from '../context.js';

/** net_version: answered by the upstream node as it is (params validated against the spec first). */
export default passThrough('net_version');
