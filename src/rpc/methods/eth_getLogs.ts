import { defineMethod } from '../context.js';
import { getLogs } from '../log-range.js';

/**
 * eth_getLogs: bounds are hex, latest or earliest (the spec refuses pending/safe/finalized with -32602);
 * blockHash wins over a range; range and result count capped with -32005 naming the cap.
 */
export default defineMethod('eth_getLogs', (ctx, [filter], call) => getLogs(ctx, filter, call));
