import { defineMethod } from '../context.js';
import { computeAnswer } from '../evm-bounds.js';

/**
 * eth_createAccessList: answered by the upstream node, bounded as eth_call: gas by RPC_GAS_CAP (capGas; an
 * omitted gas becomes the cap) and time by RPC_EVM_TIMEOUT_MS (the pool's compute gate); block defaults to latest.
 */
export default defineMethod('eth_createAccessList', (ctx, params, call) =>
  computeAnswer(ctx, 'eth_createAccessList', params, call, { blockAt: 1 }),
);
