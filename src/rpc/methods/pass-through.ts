import { defineMethod, passThrough } from '../context.js';
import { netAnswer } from '../net-fallback.js';

/*
 * The methods the upstream node answers as it is, one line each: params validated against the spec first, the
 * node's text passed on unparsed, reads from the answer cache when they cannot have changed (context.ts
 * upstreamAnswer, cache/policy.ts).
 */

export const eth_chainId = passThrough('eth_chainId');
export const net_version = passThrough('net_version');
export const web3_clientVersion = passThrough('web3_clientVersion');
export const eth_syncing = passThrough('eth_syncing');
export const eth_gasPrice = passThrough('eth_gasPrice');
export const eth_maxPriorityFeePerGas = passThrough('eth_maxPriorityFeePerGas');
export const eth_feeHistory = passThrough('eth_feeHistory');
/** Uncached: it moves with every block. */
export const eth_blobBaseFee = passThrough('eth_blobBaseFee');

export const eth_getBlockByHash = passThrough('eth_getBlockByHash');
export const eth_getBlockByNumber = passThrough('eth_getBlockByNumber');
export const eth_getBlockReceipts = passThrough('eth_getBlockReceipts');
export const eth_getBlockTransactionCountByHash = passThrough('eth_getBlockTransactionCountByHash');
export const eth_getBlockTransactionCountByNumber = passThrough('eth_getBlockTransactionCountByNumber');
export const eth_getTransactionByHash = passThrough('eth_getTransactionByHash');
export const eth_getTransactionByBlockHashAndIndex = passThrough('eth_getTransactionByBlockHashAndIndex');
export const eth_getTransactionReceipt = passThrough('eth_getTransactionReceipt');

// State at a block: the block defaults to latest (cache/policy.ts withLatest).
export const eth_getBalance = passThrough('eth_getBalance');
export const eth_getCode = passThrough('eth_getCode');
export const eth_getStorageAt = passThrough('eth_getStorageAt');
export const eth_getTransactionCount = passThrough('eth_getTransactionCount');

// A proof-of-stake chain has no uncles: 0 or null.
export const eth_getUncleCountByBlockHash = passThrough('eth_getUncleCountByBlockHash');
export const eth_getUncleCountByBlockNumber = passThrough('eth_getUncleCountByBlockNumber');
export const eth_getUncleByBlockHashAndIndex = passThrough('eth_getUncleByBlockHashAndIndex');
export const eth_getUncleByBlockNumberAndIndex = passThrough('eth_getUncleByBlockNumberAndIndex');

// The node's answer, or ours when it lacks the method (net-fallback.ts): the endpoint answering is listening, and a
// development node has no peers.
export const net_listening = defineMethod('net_listening', (ctx) => netAnswer(ctx, 'net_listening', true));
export const net_peerCount = defineMethod('net_peerCount', (ctx) => netAnswer(ctx, 'net_peerCount', '0x0'));
