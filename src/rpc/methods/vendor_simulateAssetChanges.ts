import type { CallObject } from '../../../generated/rpc/methods.js';
import { simulateAssetChanges } from '../asset-changes.js';
import { defineMethod } from '../context.js';

/** vendor_simulateAssetChanges: served here, not by the bundler (see src/rpc/asset-changes.ts). */
export default defineMethod('vendor_simulateAssetChanges', (ctx, params) => simulateAssetChanges(ctx, params[0] as CallObject, params[1] as string | undefined));
