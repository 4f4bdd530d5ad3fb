import { defineMethod, type MethodAnswer } from '../context.js';
import { pollFilterChanges } from '../filters/poll.js';

/** eth_getFilterChanges: each entry exactly once across replicas; unknown or expired → filter not found. */
export default defineMethod('eth_getFilterChanges', (ctx, [filterId]) =>
  // filters/poll.ts answers block hashes or the node's logs (a RawJson) but declares `unknown`.
  pollFilterChanges(ctx, filterId) as Promise<MethodAnswer<'eth_getFilterChanges'>>,
);
