import { env, parseEnv, type EnvValues } from '../common/config/env.js';
import { httpEnv, httpLimitsFrom } from '../common/config/http-env.js';
import { wsEnv, wsLimitsFrom } from './ws/config.js';

/** The items of a comma-separated variable, trimmed, empty ones left out. */
const commaList = (raw: string): string[] =>
  raw
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** A custom variable's parse: its text as it is when `valid` says so. */
const accepted = (valid: (raw: string) => boolean) => (raw: string) =>
  valid(raw) ? { ok: true as const, value: raw } : { ok: false as const };

/**
 * Environment of `l2stack rpc`. Every variable is documented in .env.example (section "RPC endpoint"); the defaults are
 * what a single public endpoint in front of one node needs. LOG_LEVEL and DATABASE_* are the common variables
 * (src/common/config/common-env.ts).
 */
export const rpcEnv = {
  RPC_HOST: env.string({ default: '127.0.0.1' }).describe('Address the RPC endpoint listens on.'),
  RPC_PORT: env
    .integer({ min: 0, max: 65535, default: 8545 })
    .describe('Port of the RPC endpoint (HTTP and WebSocket).'),
  RPC_UPSTREAM_URLS: env
    .urlList({ required: true })
    .describe('Execution nodes, comma-separated (their paths and keys are never logged).'),
  RPC_CHAIN_ID: env.integer({ min: 1 }).describe('Nodes answering another eth_chainId are never used.'),
  RPC_UPSTREAM_TIMEOUT_MS: env
    .integer({ min: 50, default: 10_000 })
    .describe('Time (ms) a node has to answer one request.'),
  RPC_UPSTREAM_HEAD_POLL_MS: env.integer({ min: 20, default: 1_000 }).describe('Head poll period (ms) of each node.'),
  RPC_UPSTREAM_MAX_LAG_BLOCKS: env
    .integer({ min: 0, default: 5 })
    .describe('A node further behind the best head is used only when no caught-up node answers.'),
  RPC_HEAD_SOURCE: env
    .oneOf(['subscribe', 'poll'] as const, { default: 'subscribe' })
    .describe('subscribe: newHeads on each node as well as the poll; poll: the poll only.'),
  RPC_UPSTREAM_WS_URLS: env
    .custom<string, { default: string }>(
      'comma-separated ws:// or wss:// URLs, one per RPC_UPSTREAM_URLS entry in the same order (empty: each HTTP URL with the ws scheme)',
      accepted((raw) => commaList(raw).every((x) => /^wss?:\/\/[^\s]+$/.test(x))),
      { default: '' },
    )
    .describe('WebSocket URLs of the nodes, in RPC_UPSTREAM_URLS order.'),
  RPC_HEAD_DEPTH: env
    .integer({ min: 8, max: 10_000, default: 128 })
    .describe('Blocks the head tracker remembers: the deepest reorg it follows.'),
  RPC_CACHE_BYTES: env
    .integer({ min: 0, default: 67_108_864 })
    .describe('Bytes of the answer cache (final answers, reads at latest until the head moves); 0 = off.'),
  RPC_WORKERS: env
    .integer({ min: 1, max: 64, default: 1 })
    .describe(
      'Processes serving the port (node:cluster); more than 1 needs PostgreSQL and RPC_TRANSPORT node or auto.',
    ),
  RPC_TRANSPORT: env
    .oneOf(['auto', 'node', 'uws'] as const, { default: 'auto' })
    .describe(
      'HTTP/WebSocket stack: node (node:http, ws), uws (uWebSockets.js), auto (uws where its build loads, on Linux, with RPC_WORKERS=1); docs/rpc-speed.md.',
    ),
  RPC_UPSTREAM_MAX_BATCH_BYTES: env
    .integer({ min: 1_024, default: 524_288 })
    .describe('Bytes of one merged batch to a node (a bigger single call goes alone).'),
  RPC_UPSTREAM_MAX_SOCKETS: env
    .integer({ min: 1, max: 10_000, default: 128 })
    .describe('Keep-alive connections per node at most; further requests wait.'),
  RPC_MAX_BATCH: env
    .integer({ min: 1, max: 10_000, default: 100 })
    .describe('Calls in one JSON-RPC batch at most; more: -32600.'),
  RPC_MAX_INFLIGHT_PER_CLIENT: env
    .integer({ min: 0, max: 1_000_000, default: 128 })
    .describe('Calls of one client running at once, HTTP and WebSocket (0 = off); more: 429 / -32005.'),
  RPC_MAX_BODY_BYTES: env
    .integer({ min: 1_024, default: 1_048_576 })
    .describe('Bytes of one request body; more: HTTP 413.'),
  RPC_MAX_RESPONSE_BYTES: env
    .integer({ min: 1_024, default: 10_485_760 })
    .describe('Bytes of one reply and of one node answer; calls past it: -32005 (a batch keeps what fits).'),
  RPC_MAX_LOGS_BLOCK_RANGE: env
    .integer({ min: 1, default: 10_000 })
    .describe('Blocks one eth_getLogs / eth_getFilterLogs may span; more: -32005.'),
  RPC_MAX_LOGS_RESULTS: env
    .integer({ min: 1, default: 10_000 })
    .describe('Logs one eth_getLogs / eth_getFilterLogs may return; more: -32005.'),
  RPC_LOGS_CHUNK_BLOCKS: env
    .integer({ min: 1, default: 8 })
    .describe('A wider log query goes to the node in chunks, the first this many blocks.'),
  RPC_LOGS_WIDE_MAX_PER_CLIENT: env
    .integer({ min: 1, max: 1_000, default: 2 })
    .describe('Chunked log queries one client may have in flight (more wait up to RPC_EVM_TIMEOUT_MS).'),
  RPC_FILTER_TTL_SECONDS: env.integer({ min: 1, default: 300 }).describe('A filter not polled this long (s) is gone.'),
  RPC_MAX_FILTER_ADDRESSES: env
    .integer({ min: 1, default: 1_000 })
    .describe('Addresses in one filter or eth_getLogs; more: -32602.'),
  RPC_MAX_FILTER_TOPICS: env
    .integer({ min: 1, default: 1_000 })
    .describe('Topics in one position and in all positions together; more: -32602.'),
  RPC_MAX_FILTERS_PER_CLIENT: env
    .integer({ min: 1, default: 100 })
    .describe('Live filters of one client (counted in the database, all replicas); more: -32005.'),
  RPC_MAX_FILTERS: env.integer({ min: 1, default: 10_000 }).describe('Live filters in all; more: -32005.'),
  RPC_MAX_JSON_DEPTH: env
    .integer({ min: 8, max: 1_000, default: 64 })
    .describe('Nesting of a request body, checked before anything walks it; deeper: -32602 / -32600.'),
  RPC_RATE_LIMIT_PER_SECOND: env
    .integer({ min: 0, default: 50 })
    .describe('Rate units a second per client (token bucket; 0 = off); past it 429, -32005.'),
  RPC_RATE_LIMIT_BURST: env.integer({ min: 1 }).describe('Bucket size; unset = 2 x RPC_RATE_LIMIT_PER_SECOND.'),
  RPC_RATE_LIMIT_STORE: env
    .oneOf(['memory', 'postgres'] as const, { default: 'memory' })
    .describe('Where buckets live: memory (per process) or postgres (shared by replicas).'),
  RPC_RATE_LIMIT_BYTES_PER_UNIT: env
    .integer({ min: 0, default: 32_768 })
    .describe('An answer (or a raw transaction) costs 1 more unit per this many bytes (0 = calls only).'),
  RPC_RATE_LIMIT_MS_PER_UNIT: env
    .integer({ min: 0, default: 10 })
    .describe('A call costs 1 more unit per this many ms it kept the node executing (0 = time free).'),
  RPC_GAS_CAP: env
    .bigint({ min: 21_000n, default: 50_000_000n })
    .describe('Gas of a call that executes at most (an omitted gas is set to it; more: -32602).'),
  // geth's RPCEVMTimeout (5 s); 4 at once keeps most of a small node's cores for reads and block production.
  RPC_EVM_TIMEOUT_MS: env
    .integer({ min: 50, default: 5_000 })
    .describe('Time (ms) from arrival, waiting included, within which a call that executes is answered; then -32005.'),
  RPC_EVM_MAX_CONCURRENT: env
    .integer({ min: 1, max: 1_000, default: 4 })
    .describe('Calls that execute running on the nodes at once per process (the rest wait).'),
  RPC_TRACE_MAX_PER_CLIENT: env
    .integer({ min: 1, max: 1_000, default: 2 })
    .describe('Traces one client may have in flight per process (more wait up to RPC_EVM_TIMEOUT_MS).'),
  RPC_SIMULATE_MAX_BLOCKS: env
    .integer({ min: 1, max: 256, default: 16 })
    .describe('Blocks of one eth_simulateV1; more: -32005.'),
  RPC_SIMULATE_MAX_CALLS: env
    .integer({ min: 1, max: 10_000, default: 128 })
    .describe('Calls over all blocks of one eth_simulateV1; more: -32005.'),
  RPC_TRUSTED_PROXY_HOPS: env
    .integer({ min: 0, max: 10, default: 0 })
    .describe('Reverse proxies in front whose X-Forwarded-For names the client (0 = the socket address).'),
  RPC_KEY_FAILURES_PER_MINUTE: env
    .integer({ min: 1, max: 100_000, default: 30 })
    .describe('Bad API keys one address may present a minute; then 429, -32005 without a database read.'),
  RPC_OPERATOR_PORT: env
    .integer({ min: 0, max: 65535 })
    .describe('/metrics and /health/* on this port (404 on RPC_PORT); unset = on RPC_PORT.'),
  RPC_OPERATOR_HOST: env.string({ default: '127.0.0.1' }).describe('Address of the operator port.'),
  RPC_CORS_ORIGINS: env
    .custom<string, { default: string }>(
      '"*" (any origin), "none" (no CORS headers), or comma-separated origins such as https://app.example.org',
      accepted((raw) => {
        if (raw === '*' || raw === 'none') return true;
        const items = commaList(raw);
        return items.length > 0 && items.every((x) => /^https?:\/\/[^\s/,*]+$/.test(x));
      }),
      { default: '*' },
    )
    .describe('CORS of the JSON-RPC route: * (any page), none, or origins, comma-separated.'),
  RPC_BUNDLER_URL: env.url().describe('ERC-4337 bundler; unset = bundler methods answer -32601.'),
  RPC_BUNDLER_VENDOR_PREFIX: env
    .custom<string, { default: string }>(
      'lower-case letters and digits ending in "_" (for example pimlico_)',
      accepted((raw) => /^[a-z][a-z0-9]*_$/.test(raw)),
      { default: 'vendor_' },
    )
    .describe("The bundler's name for vendor_ methods (Alto: pimlico_)."),
  RPC_ESTIMATE_GAS_MARGIN: env
    .decimal({ min: 1, max: 100, default: '1.2' })
    .describe('svc_estimateGas priority fee = margin x (variable cost x compressed size / gas + fixed cost).'),
  RPC_ESTIMATE_GAS_FIXED_COST_WEI: env
    .bigint({ min: 0n, default: 30_000_000n })
    .describe('svc_estimateGas fixed cost, wei per gas.'),
  RPC_ESTIMATE_GAS_VARIABLE_COST_WEI: env
    .bigint({ min: 0n, default: 1_000_000_000n })
    .describe('svc_estimateGas variable cost, wei per compressed byte.'),
  RPC_MAX_RAW_TX_BYTES: env
    .integer({ min: 1_024, default: 131_072 })
    .describe('Bytes of one raw transaction (blob sidecar not counted); more: -32000 oversized data.'),
  RPC_SEND_SYNC_TIMEOUT_MS: env
    .integer({ min: 1, max: 60_000, default: 2_000 })
    .describe('Longest wait (ms) of eth_sendRawTransactionSync for the receipt, and the wait when none is asked.'),
  RPC_TRACE_TRANSACTION_SOURCE: env
    .oneOf(['auto', 'upstream', 'callTracer'] as const, { default: 'auto' })
    .describe("trace_transaction: auto (the node's, else converted from callTracer), upstream or callTracer.")
    .testOnly(),
  /** Connection limits shared by every HTTP server (src/common/config/http-env.ts). */
  ...wsEnv,
  ...httpEnv,
};

/** RPC_CORS_ORIGINS as the server applies it: '*', or the allowed origins ("none": an empty list). */
const corsOrigins = (raw: string): '*' | readonly string[] =>
  raw === '*' ? '*' : Object.freeze(raw === 'none' ? [] : commaList(raw).map((x) => x.replace(/\/$/, '')));

/**
 * The endpoint's settings from its parsed variables: each is its variable's value (see rpcEnv) unless said otherwise.
 */
function rpcConfigFrom(v: EnvValues<typeof rpcEnv>, effective: Record<string, string | undefined>) {
  return {
    host: v.RPC_HOST,
    port: v.RPC_PORT,
    upstreamUrls: Object.freeze([...v.RPC_UPSTREAM_URLS]),
    chainId: v.RPC_CHAIN_ID,
    upstreamTimeoutMs: v.RPC_UPSTREAM_TIMEOUT_MS,
    headPollMs: v.RPC_UPSTREAM_HEAD_POLL_MS,
    maxLagBlocks: v.RPC_UPSTREAM_MAX_LAG_BLOCKS,
    headSource: v.RPC_HEAD_SOURCE,
    upstreamWsUrls: Object.freeze(commaList(v.RPC_UPSTREAM_WS_URLS)),
    headDepth: v.RPC_HEAD_DEPTH,
    cacheBytes: v.RPC_CACHE_BYTES,
    workers: v.RPC_WORKERS,
    /**
     * `node` (node:http and ws): every HTTP_* limit applies. `uws` (uWebSockets.js): about half the CPU per small
     * call; HTTP_MAX_CONNECTIONS, HTTP_HEADERS_TIMEOUT_MS and HTTP_KEEP_ALIVE_TIMEOUT_MS are uWS's own (no cap, 10 s,
     * 10 s); docs/rpc-speed.md. `auto`: uws where its build loads on this Node and C library (transport/uws/load.ts).
     */
    transport: v.RPC_TRANSPORT,
    upstreamMaxBatchBytes: v.RPC_UPSTREAM_MAX_BATCH_BYTES,
    upstreamMaxSockets: v.RPC_UPSTREAM_MAX_SOCKETS,
    maxBatch: v.RPC_MAX_BATCH,
    maxInflightPerClient: v.RPC_MAX_INFLIGHT_PER_CLIENT,
    maxBodyBytes: v.RPC_MAX_BODY_BYTES,
    maxResponseBytes: v.RPC_MAX_RESPONSE_BYTES,
    maxLogsBlockRange: v.RPC_MAX_LOGS_BLOCK_RANGE,
    maxLogsResults: v.RPC_MAX_LOGS_RESULTS,
    // A wide range goes to the node in chunks, the first of chunkBlocks, the next sized by the bytes per block seen so
    // far (log-range.ts).
    logs: { chunkBlocks: v.RPC_LOGS_CHUNK_BLOCKS, wideMaxPerClient: v.RPC_LOGS_WIDE_MAX_PER_CLIENT },
    filterTtlSeconds: v.RPC_FILTER_TTL_SECONDS,
    maxFilterAddresses: v.RPC_MAX_FILTER_ADDRESSES,
    maxFilterTopics: v.RPC_MAX_FILTER_TOPICS,
    maxFiltersPerClient: v.RPC_MAX_FILTERS_PER_CLIENT,
    maxFilters: v.RPC_MAX_FILTERS,
    maxJsonDepth: v.RPC_MAX_JSON_DEPTH,
    rateLimit: {
      perSecond: v.RPC_RATE_LIMIT_PER_SECOND,
      burst: v.RPC_RATE_LIMIT_BURST ?? Math.max(1, v.RPC_RATE_LIMIT_PER_SECOND * 2),
      store: v.RPC_RATE_LIMIT_STORE,
      bytesPerUnit: v.RPC_RATE_LIMIT_BYTES_PER_UNIT,
      msPerUnit: v.RPC_RATE_LIMIT_MS_PER_UNIT,
    },
    evm: { gasCap: v.RPC_GAS_CAP, timeoutMs: v.RPC_EVM_TIMEOUT_MS, maxConcurrent: v.RPC_EVM_MAX_CONCURRENT },
    traceMaxPerClient: v.RPC_TRACE_MAX_PER_CLIENT,
    simulate: { maxBlocks: v.RPC_SIMULATE_MAX_BLOCKS, maxCalls: v.RPC_SIMULATE_MAX_CALLS },
    trustedProxyHops: v.RPC_TRUSTED_PROXY_HOPS,
    keyFailuresPerMinute: v.RPC_KEY_FAILURES_PER_MINUTE,
    operator: v.RPC_OPERATOR_PORT === undefined ? undefined : { host: v.RPC_OPERATOR_HOST, port: v.RPC_OPERATOR_PORT },
    corsOrigins: corsOrigins(v.RPC_CORS_ORIGINS),
    bundler: { url: v.RPC_BUNDLER_URL, vendorPrefix: v.RPC_BUNDLER_VENDOR_PREFIX },
    estimateGas: {
      margin: v.RPC_ESTIMATE_GAS_MARGIN,
      fixedCostWei: v.RPC_ESTIMATE_GAS_FIXED_COST_WEI,
      variableCostWei: v.RPC_ESTIMATE_GAS_VARIABLE_COST_WEI,
    },
    traceTransactionSource: v.RPC_TRACE_TRANSACTION_SOURCE,
    // Defaults: geth's txpool limit (128 KiB); EIP-7966's recommended wait (2 s).
    sends: { maxRawTxBytes: v.RPC_MAX_RAW_TX_BYTES, syncTimeoutMs: v.RPC_SEND_SYNC_TIMEOUT_MS },
    ws: wsLimitsFrom(v),
    http: httpLimitsFrom(v),
    /** Postgres schema of the filter and rate-limit tables (not an env variable: tests use their own). */
    dbSchema: 'rpc',
    /** Every variable with its effective value, secrets and URL paths redacted: safe to log. */
    effective,
  };
}

export type RpcConfig = Readonly<ReturnType<typeof rpcConfigFrom>>;

export function loadRpcConfig(
  source: Record<string, string | undefined>,
  overrides: Partial<RpcConfig> = {},
): RpcConfig {
  const { values: v, effective } = parseEnv(rpcEnv, source);
  return Object.freeze({ ...rpcConfigFrom(v, effective), ...overrides });
}
