import { defineMethod } from '../context.js';
import { estimateGas } from '../estimate-gas.js';

/** svc_estimateGas: {gasLimit, baseFeePerGas, priorityFeePerGas}; see src/rpc/estimate-gas.ts for the formula. */
export default defineMethod('svc_estimateGas', (ctx, [transaction, block], call) =>
  estimateGas(ctx, transaction, block, call),
);
