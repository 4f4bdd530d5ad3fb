import type { Registry } from 'prom-client';
import type { Logger } from '../../common/log.js';
import type { ClientLimits, JsonRpcHttpClient } from './client.js';
import type { ComputeLimits } from './gate.js';

/* The pool's options and its bookkeeping of each node (pool.ts). */

/**
 * Reads whose answers may be large go upstream alone, never merged into a batch: a single answer's result
 * is found without reading it (raw-json.ts fastResult), a batch answer has to be scanned to be cut apart.
 */
export const LARGE_ANSWERS = new Set([
  'eth_getLogs',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getBlockReceipts',
  'debug_traceBlockByNumber',
  'debug_traceBlockByHash',
  'debug_traceTransaction',
  'debug_traceCall',
  'trace_transaction',
  'eth_getProof',
  'eth_simulateV1',
]);

export interface UpstreamOptions {
  urls: readonly string[];
  timeoutMs: number;
  headPollMs: number;
  maxLagBlocks: number;
  chainId: number | undefined;
  /**
   * Batch bytes, answer bytes and sockets per node (RPC_UPSTREAM_MAX_BATCH_BYTES, RPC_MAX_RESPONSE_BYTES,
   * RPC_UPSTREAM_MAX_SOCKETS).
   */
  limits: ClientLimits;
  /**
   * newHeads subscriptions feeding the head tracker (RPC_UPSTREAM_WS_URLS; by default each HTTP URL with
   * the ws scheme; an empty list: polling only).
   */
  wsUrls?: readonly (string | undefined)[];
  /** Blocks the head tracker remembers (reorg depth it follows, block-filter hashes it serves). */
  headDepth: number;
  /** RPC_EVM_TIMEOUT_MS and RPC_EVM_MAX_CONCURRENT: calls that make the node execute (see `compute`). */
  compute: ComputeLimits;
  logger: Logger;
  metrics: Registry;
}

export interface Upstream {
  /** u0, u1, …: the metrics label (URLs often carry API keys). */
  id: string;
  shown: string;
  client: JsonRpcHttpClient;
  healthy: boolean;
  /** Wrong chain id: never used. */
  wrongChain: boolean;
  head: bigint | undefined;
  inflight: number;
  /** Exponentially weighted latency in ms, to prefer the faster of equal upstreams. */
  latencyMs: number;
  lastError: string | undefined;
  /** Its newHeads subscription is up: the tracker hears of its blocks as they are made. */
  live: boolean;
}

export interface UpstreamStatus {
  id: string;
  url: string;
  healthy: boolean;
  head: string | undefined;
  lastError: string | undefined;
}
