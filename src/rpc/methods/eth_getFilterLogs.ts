import { defineMethod } from '../context.js';
import { getLogs } from '../log-range.js';

/**
 * eth_getFilterLogs: every log of a log filter's range, with eth_getLogs' caps, chunks and charge (under this reply's
 * byte budget); it also keeps the filter alive.
 */
export default defineMethod('eth_getFilterLogs', async (ctx, [filterId], call) => {
  const f = await ctx.filters.get(filterId, 'log');
  await ctx.filters.touch(f.id);
  return getLogs(ctx, f.criteria, call);
});
