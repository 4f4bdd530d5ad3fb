/**
 * Every served method's handler, one file each named after its method, or one line of pass-through.ts (a method the
 * node answers as it is), computed.ts (a call it executes, bounded) or user-operations.ts (one the bundler answers).
 * index.ts makes them the registry.
 */
export * from './computed.js';
export * from './pass-through.js';
export * from './user-operations.js';
export { default as debug_traceBlockByHash } from './debug_traceBlockByHash.js';
export { default as debug_traceBlockByNumber } from './debug_traceBlockByNumber.js';
export { default as debug_traceCall } from './debug_traceCall.js';
export { default as debug_traceTransaction } from './debug_traceTransaction.js';
export { default as eth_baseFee } from './eth_baseFee.js';
export { default as eth_blockNumber } from './eth_blockNumber.js';
export { default as eth_fillTransaction } from './eth_fillTransaction.js';
export { default as eth_getFilterChanges } from './eth_getFilterChanges.js';
export { default as eth_getFilterLogs } from './eth_getFilterLogs.js';
export { default as eth_getLogs } from './eth_getLogs.js';
export { default as eth_getProof } from './eth_getProof.js';
export { default as eth_getTransactionByBlockNumberAndIndex } from './eth_getTransactionByBlockNumberAndIndex.js';
export { default as eth_newBlockFilter } from './eth_newBlockFilter.js';
export { default as eth_newFilter } from './eth_newFilter.js';
export { default as eth_newPendingTransactionFilter } from './eth_newPendingTransactionFilter.js';
export { default as eth_sendRawTransaction } from './eth_sendRawTransaction.js';
export { default as eth_sendRawTransactionSync } from './eth_sendRawTransactionSync.js';
export { default as eth_simulateV1 } from './eth_simulateV1.js';
export { default as eth_subscribe } from './eth_subscribe.js';
export { default as eth_uninstallFilter } from './eth_uninstallFilter.js';
export { default as eth_unsubscribe } from './eth_unsubscribe.js';
export { default as svc_estimateGas } from './svc_estimateGas.js';
export { default as svc_getProof } from './svc_getProof.js';
export { default as trace_transaction } from './trace_transaction.js';
export { default as vendor_simulateAssetChanges } from './vendor_simulateAssetChanges.js';
export { default as web3_sha3 } from './web3_sha3.js';
