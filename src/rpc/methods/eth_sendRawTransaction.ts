import { passThrough } from '../context.js';

/**
 * eth_sendRawTransaction: sent to one upstream; resent to another only when the first provably never got
 * it (connection refused). After an ambiguous failure (timeout, reset, 5xx) the caller gets the error.
 */
export default passThrough('eth_sendRawTransaction', { write: true });
