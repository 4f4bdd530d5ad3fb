import type { CallObject } from '../../../generated/rpc/methods.js';
import { defineMethod } from '../context.js';
import { estimateGas } from '../estimate-gas.js';

/** svc_estimateGas: {gasLimit, baseFeePerGas, priorityFeePerGas}; see src/rpc/estimate-gas.ts for the formula. */
export default defineMethod('svc_estimateGas', (ctx, params) => estimateGas(ctx, params[0] as CallObject, params[1] as string | undefined));
