import { computedMethod } from '../evm-bounds.js';

/*
 * Calls the node executes, answered as it wrote them (evm-bounds.ts computeAnswer), one line each: gas bounded by
 * RPC_GAS_CAP (capGas: an omitted gas becomes the cap), time by RPC_EVM_TIMEOUT_MS (the pool's compute gate), the
 * block defaulting to latest.
 */

export const eth_call = computedMethod('eth_call');
/** Searched up to RPC_GAS_CAP within RPC_EVM_TIMEOUT_MS. */
export const eth_estimateGas = computedMethod('eth_estimateGas');
export const eth_createAccessList = computedMethod('eth_createAccessList');
