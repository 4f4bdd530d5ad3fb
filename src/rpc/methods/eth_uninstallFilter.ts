import { defineMethod } from '../context.js';

/** eth_uninstallFilter: true when a live filter was removed, false for an unknown or expired one. */
export default defineMethod('eth_uninstallFilter', (ctx, [filterId]) => ctx.filters.remove(filterId));
