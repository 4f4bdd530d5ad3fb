import { env, parseEnv } from './env.js';

/**
 * Connection limits of every HTTP server we run (token API, RPC endpoint, relayer API), declared once so each service's
 * config includes the same variables with the same defaults.
 *
 * Why these defaults: an idle or trickling client must not hold a socket (and a file descriptor) for long, and the
 * number of sockets must stay well below the process's descriptor limit, so a flood of connections is refused at the
 * door instead of turning into EMFILE for every other client and for our own outgoing connections (database, nodes).
 */
export const httpEnv = {
  HTTP_MAX_CONNECTIONS: env
    .integer({ min: 1, max: 1_000_000, default: 4_096 })
    .describe('Open sockets per server; past it a new connection is closed at accept.'),
  HTTP_MAX_CONNECTIONS_PER_CLIENT: env
    .integer({ min: 0, max: 1_000_000, default: 256 })
    .describe('Open sockets of one client address per server, WebSocket included (0 = off; behind a proxy raise it).'),
  HTTP_FD_RESERVE: env
    .integer({ min: 0, max: 1_000_000, default: 1_024 })
    .describe('Descriptors kept for our own connections: servers accept at most `ulimit -n` minus this many.'),
  HTTP_HEADERS_TIMEOUT_MS: env
    .integer({ min: 100, max: 600_000, default: 20_000 })
    .describe('Time (ms) a client has to send the request headers; then 408 and the socket closed.'),
  HTTP_REQUEST_TIMEOUT_MS: env
    .integer({ min: 100, max: 3_600_000, default: 30_000 })
    .describe('Time (ms) a client has to send the whole request with its body; then 408 and the socket closed.'),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: env
    .integer({ min: 100, max: 600_000, default: 65_000 })
    .describe('Time (ms) an idle keep-alive connection stays open (longer than balancers, so they close first).'),
};

type HttpValues = ReturnType<typeof parseEnv<typeof httpEnv>>['values'];

export function httpLimitsFrom(values: HttpValues) {
  return Object.freeze({
    maxConnections: values.HTTP_MAX_CONNECTIONS,
    /** HTTP_MAX_CONNECTIONS_PER_CLIENT (0: off). */
    maxConnectionsPerClient: values.HTTP_MAX_CONNECTIONS_PER_CLIENT,
    /** HTTP_FD_RESERVE: descriptors kept out of the clients' reach (src/common/http/descriptors.ts). */
    fdReserve: values.HTTP_FD_RESERVE,
    // Node requires headersTimeout <= requestTimeout; a smaller request timeout bounds the headers too.
    headersTimeoutMs: Math.min(values.HTTP_HEADERS_TIMEOUT_MS, values.HTTP_REQUEST_TIMEOUT_MS),
    requestTimeoutMs: values.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeoutMs: values.HTTP_KEEP_ALIVE_TIMEOUT_MS,
  });
}

export type HttpLimits = ReturnType<typeof httpLimitsFrom>;

/** The limits where no HTTP_* variable is read: the defaults of httpEnv. */
export const DEFAULT_HTTP_LIMITS: HttpLimits = httpLimitsFrom(parseEnv(httpEnv, {}).values);
