import { defineMethod } from '../context.js';
import { pollFilterChanges } from '../filters/poll.js';

/** eth_getFilterChanges: each entry exactly once across replicas; unknown or expired → filter not found. */
export default defineMethod('eth_getFilterChanges', (ctx, [filterId]) => pollFilterChanges(ctx, filterId));
