import { env } from '../../common/config/env.js';

/** WebSocket side of `l2stack rpc` (same port as HTTP). Documented in .env.example, section "RPC endpoint". */
export const wsEnv = {
  RPC_WS_MAX_SOCKETS: env
    .integer({ min: 0, max: 1_000_000, default: 2_048 })
    .describe('WebSocket sockets on the RPC port (0 = WebSocket off); more: HTTP 503.'),
  RPC_WS_MAX_SOCKETS_PER_CLIENT: env
    .integer({ min: 0, max: 1_000_000, default: 64 })
    .describe('Sockets of one client (address or API key), subscribed or not (0 = no cap); more: HTTP 429.'),
  RPC_WS_MAX_SUBSCRIPTIONS: env
    .integer({ min: 1, max: 10_000, default: 100 })
    .describe('Subscriptions per socket (a resume counts from when it is asked); more: -32005.'),
  RPC_WS_MAX_SUBSCRIPTION_ADDRESSES_PER_SOCKET: env
    .integer({ min: 1, default: 10_000 })
    .describe('Addresses in the logs subscriptions of one socket; more: -32005.'),
  RPC_WS_MAX_SUBSCRIPTION_ADDRESSES_PER_CLIENT: env
    .integer({ min: 1, default: 20_000 })
    .describe('Addresses in the logs subscriptions of one client on all its sockets of a replica.'),
  RPC_WS_MAX_BUFFERED_BYTES: env
    .integer({ min: 65_536, default: 4_194_304 })
    .describe('Bytes queued for a socket that does not read; past it the socket is closed (1008).'),
  RPC_WS_MAX_TOTAL_BUFFERED_BYTES: env
    .integer({ min: 1_048_576, default: 268_435_456 })
    .describe('Bytes queued for all sockets; past it the heaviest are closed (1008).'),
  RPC_WS_MAX_INFLIGHT: env
    .integer({ min: 1, max: 1_000, default: 32 })
    .describe('Calls of one socket running at once; past it the socket is not read.'),
  RPC_WS_IDLE_TIMEOUT_MS: env
    .integer({ min: 1_000, default: 60_000 })
    .describe('A socket without subscriptions silent this long (ms) is closed (1000).'),
  RPC_WS_PING_MS: env
    .integer({ min: 1_000, default: 30_000 })
    .describe('Ping period (ms); a socket that did not answer the previous ping is dropped.'),
  RPC_WS_MAX_RESUME_BLOCKS: env
    .integer({ min: 0, default: 10_000 })
    .describe("How far back (blocks) eth_subscribe's resumeAfter may reach."),
  RPC_WS_PENDING_POLL_MS: env
    .integer({ min: 50, default: 1_000 })
    .describe("Poll period (ms) of the node's pending-transaction filter.")
    .testOnly(),
};

type WsValues = { [K in keyof typeof wsEnv]: number };

/** The WS limits from parsed RPC_WS_* values (parsed with the rest of the endpoint's environment). */
export function wsLimitsFrom(v: WsValues) {
  return Object.freeze({
    maxSockets: v.RPC_WS_MAX_SOCKETS,
    maxSocketsPerClient: v.RPC_WS_MAX_SOCKETS_PER_CLIENT,
    maxSubscriptions: v.RPC_WS_MAX_SUBSCRIPTIONS,
    maxAddressesPerSocket: v.RPC_WS_MAX_SUBSCRIPTION_ADDRESSES_PER_SOCKET,
    maxAddressesPerClient: v.RPC_WS_MAX_SUBSCRIPTION_ADDRESSES_PER_CLIENT,
    maxBufferedBytes: v.RPC_WS_MAX_BUFFERED_BYTES,
    // Past it the sockets holding the most are closed until the total is under it again, so memory is bounded
    // by this, not by sockets × maxBufferedBytes.
    maxTotalBufferedBytes: v.RPC_WS_MAX_TOTAL_BUFFERED_BYTES,
    maxInflight: v.RPC_WS_MAX_INFLIGHT,
    idleTimeoutMs: v.RPC_WS_IDLE_TIMEOUT_MS,
    pingMs: v.RPC_WS_PING_MS,
    maxResumeBlocks: v.RPC_WS_MAX_RESUME_BLOCKS,
    pendingPollMs: v.RPC_WS_PENDING_POLL_MS,
  });
}

/** The WebSocket limits (RPC_WS_*, described in wsEnv above). */
export type WsLimits = ReturnType<typeof wsLimitsFrom>;
