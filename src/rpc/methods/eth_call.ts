import { defineMethod } from '../context.js';
import { computeAnswer } from '../evm-bounds.js';

/**
 * eth_call: answered by the upstream node as it is, gas bounded by RPC_GAS_CAP and time by RPC_EVM_TIMEOUT_MS
 * (evm-bounds.ts; the block defaults to latest).
 */
export default defineMethod('eth_call', (ctx, params, call) =>
  computeAnswer(ctx, 'eth_call', params, call, { blockAt: 1 }),
);
