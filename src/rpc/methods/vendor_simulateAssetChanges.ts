import { simulateAssetChanges } from '../asset-changes.js';
import { defineMethod } from '../context.js';

/** vendor_simulateAssetChanges: served here, not by the bundler (see src/rpc/asset-changes.ts). */
export default defineMethod('vendor_simulateAssetChanges', (ctx, [transaction, block], call) =>
  simulateAssetChanges(ctx, transaction, block, call),
);
