import type { Filter } from '../../../generated/rpc/methods.js';
import { defineMethod } from '../context.js';
import { checkCriteria } from '../filters/caps.js';
import { currentHead } from '../log-range.js';

/**
 * eth_newFilter: kept in the endpoint's database. Polls report logs of blocks mined after creation
 * (within fromBlock/toBlock); eth_getFilterLogs reports the whole range. Criteria are capped (-32602),
 * live filters per client and in all too (-32005): src/rpc/filters/caps.ts.
 */
export default defineMethod('eth_newFilter', async (ctx, [f], call) => {
  const criteria: Filter = {};
  if (f.fromBlock !== undefined) criteria.fromBlock = f.fromBlock;
  if (f.toBlock !== undefined) criteria.toBlock = f.toBlock;
  if (f.address !== undefined) criteria.address = f.address;
  if (f.topics !== undefined) criteria.topics = f.topics;
  checkCriteria(ctx.config, criteria);
  const head = await currentHead(ctx, true);
  return ctx.filters.create('log', criteria, head + 1n, call.client);
});
