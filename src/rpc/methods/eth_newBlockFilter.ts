import { defineMethod } from '../context.js';
import { currentHead } from '../log-range.js';

/** eth_newBlockFilter: polls report the hashes of blocks mined after creation; counts toward the filter caps. */
export default defineMethod('eth_newBlockFilter', async (ctx, _params, call) => {
  const head = await currentHead(ctx, true);
  return ctx.filters.create('block', {}, head + 1n, call.client);
});
