import { defineMethod } from '../context.js';
import { computeAnswer } from '../evm-bounds.js';

/**
 * eth_estimateGas: answered by the upstream node as it is, searched up to RPC_GAS_CAP within RPC_EVM_TIMEOUT_MS
 * (evm-bounds.ts; the block defaults to latest).
 */
export default defineMethod('eth_estimateGas', (ctx, params, call) =>
  computeAnswer(ctx, 'eth_estimateGas', params, call, { blockAt: 1 }),
);
