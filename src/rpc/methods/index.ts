import type { RpcMethod } from '../context.js';
import debug_traceBlockByHash from './debug_traceBlockByHash.js';
import debug_traceBlockByNumber from './debug_traceBlockByNumber.js';
import debug_traceCall from './debug_traceCall.js';
import debug_traceTransaction from './debug_traceTransaction.js';
import eth_baseFee from './eth_baseFee.js';
import eth_blobBaseFee from './eth_blobBaseFee.js';
import eth_blockNumber from './eth_blockNumber.js';
import eth_call from './eth_call.js';
import eth_chainId from './eth_chainId.js';
import eth_createAccessList from './eth_createAccessList.js';
import eth_estimateGas from './eth_estimateGas.js';
import eth_estimateUserOperationGas from './eth_estimateUserOperationGas.js';
import eth_feeHistory from './eth_feeHistory.js';
import eth_fillTransaction from './eth_fillTransaction.js';
import eth_gasPrice from './eth_gasPrice.js';
import eth_getBalance from './eth_getBalance.js';
import eth_getBlockByHash from './eth_getBlockByHash.js';
import eth_getBlockByNumber from './eth_getBlockByNumber.js';
import eth_getBlockReceipts from './eth_getBlockReceipts.js';
import eth_getBlockTransactionCountByHash from './eth_getBlockTransactionCountByHash.js';
import eth_getBlockTransactionCountByNumber from './eth_getBlockTransactionCountByNumber.js';
import eth_getCode from './eth_getCode.js';
import eth_getFilterChanges from './eth_getFilterChanges.js';
import eth_getFilterLogs from './eth_getFilterLogs.js';
import eth_getLogs from './eth_getLogs.js';
import eth_getProof from './eth_getProof.js';
import eth_getStorageAt from './eth_getStorageAt.js';
import eth_getTransactionByBlockHashAndIndex from './eth_getTransactionByBlockHashAndIndex.js';
import eth_getTransactionByBlockNumberAndIndex from './eth_getTransactionByBlockNumberAndIndex.js';
import eth_getTransactionByHash from './eth_getTransactionByHash.js';
import eth_getTransactionCount from './eth_getTransactionCount.js';
import eth_getTransactionReceipt from './eth_getTransactionReceipt.js';
import eth_getUncleByBlockHashAndIndex from './eth_getUncleByBlockHashAndIndex.js';
import eth_getUncleByBlockNumberAndIndex from './eth_getUncleByBlockNumberAndIndex.js';
import eth_getUncleCountByBlockHash from './eth_getUncleCountByBlockHash.js';
import eth_getUncleCountByBlockNumber from './eth_getUncleCountByBlockNumber.js';
import eth_getUserOperationByHash from './eth_getUserOperationByHash.js';
import eth_getUserOperationReceipt from './eth_getUserOperationReceipt.js';
import eth_maxPriorityFeePerGas from './eth_maxPriorityFeePerGas.js';
import eth_newBlockFilter from './eth_newBlockFilter.js';
import eth_newFilter from './eth_newFilter.js';
import eth_newPendingTransactionFilter from './eth_newPendingTransactionFilter.js';
import eth_sendRawTransaction from './eth_sendRawTransaction.js';
import eth_sendRawTransactionSync from './eth_sendRawTransactionSync.js';
import eth_sendUserOperation from './eth_sendUserOperation.js';
import eth_simulateV1 from './eth_simulateV1.js';
import eth_subscribe from './eth_subscribe.js';
import eth_supportedEntryPoints from './eth_supportedEntryPoints.js';
import eth_syncing from './eth_syncing.js';
import eth_uninstallFilter from './eth_uninstallFilter.js';
import eth_unsubscribe from './eth_unsubscribe.js';
import net_listening from './net_listening.js';
import net_peerCount from './net_peerCount.js';
import net_version from './net_version.js';
import svc_estimateGas from './svc_estimateGas.js';
import svc_getProof from './svc_getProof.js';
import trace_transaction from './trace_transaction.js';
import vendor_getUserOperationGasPrice from './vendor_getUserOperationGasPrice.js';
import vendor_getUserOperationStatus from './vendor_getUserOperationStatus.js';
import vendor_simulateAssetChanges from './vendor_simulateAssetChanges.js';
import web3_clientVersion from './web3_clientVersion.js';
import web3_sha3 from './web3_sha3.js';

/** Every served method, one file each, grouped by namespace. Must match specs/rpc.openrpc.json exactly. */
export const METHODS: readonly RpcMethod[] = [
  // eth_
  eth_blockNumber,
  eth_baseFee,
  eth_blobBaseFee,
  eth_call,
  eth_chainId,
  eth_createAccessList,
  eth_estimateGas,
  eth_estimateUserOperationGas,
  eth_feeHistory,
  eth_fillTransaction,
  eth_gasPrice,
  eth_getBalance,
  eth_getBlockByHash,
  eth_getBlockByNumber,
  eth_getBlockReceipts,
  eth_getBlockTransactionCountByHash,
  eth_getBlockTransactionCountByNumber,
  eth_getCode,
  eth_getFilterChanges,
  eth_getFilterLogs,
  eth_getLogs,
  eth_getProof,
  eth_getStorageAt,
  eth_getTransactionByBlockHashAndIndex,
  eth_getTransactionByBlockNumberAndIndex,
  eth_getTransactionByHash,
  eth_getTransactionCount,
  eth_getTransactionReceipt,
  eth_getUncleByBlockHashAndIndex,
  eth_getUncleByBlockNumberAndIndex,
  eth_getUncleCountByBlockHash,
  eth_getUncleCountByBlockNumber,
  eth_getUserOperationByHash,
  eth_getUserOperationReceipt,
  eth_maxPriorityFeePerGas,
  eth_newBlockFilter,
  eth_newFilter,
  eth_newPendingTransactionFilter,
  eth_sendRawTransaction,
  eth_sendRawTransactionSync,
  eth_sendUserOperation,
  eth_simulateV1,
  eth_supportedEntryPoints,
  eth_syncing,
  eth_subscribe,
  eth_uninstallFilter,
  eth_unsubscribe,
  // net_
  net_listening,
  net_version,
  net_peerCount,
  // web3_
  web3_clientVersion,
  web3_sha3,
  // debug_
  debug_traceBlockByHash,
  debug_traceBlockByNumber,
  debug_traceCall,
  debug_traceTransaction,
  // trace_
  trace_transaction,
  // svc_
  svc_estimateGas,
  svc_getProof,
  // vendor_
  vendor_getUserOperationGasPrice,
  vendor_getUserOperationStatus,
  vendor_simulateAssetChanges,
];
