import { defineMethod } from '../context.js';
import { pendingWatch } from '../filters/pending.js';

/**
 * eth_newPendingTransactionFilter: a filter in the shared database whose cursor is a seq of the recorded
 * pending hashes (filters/pending.ts). This replica watches the node before the cursor is read, so every
 * hash the node receives from here on is recorded after it. Counts toward the filter caps.
 */
export default defineMethod('eth_newPendingTransactionFilter', async (ctx, _params, call) => {
  await pendingWatch(ctx).keep();
  const cursor = await ctx.filters.pendingCursor();
  return ctx.filters.create('pending', {}, cursor, call.client);
});
