import type { HttpLimits } from '../config/http-env.js';
import type { Logger } from '../log.js';
import { ClientQuota } from './client-quota.js';
import { descriptors } from './descriptors.js';

/**
 * Which limit refused a connection: the server's (HTTP_MAX_CONNECTIONS), the client's, or the process's descriptors.
 */
export type Refused = 'server' | 'client' | 'process';

/**
 * The TCP connection caps of one server, whichever HTTP stack accepts its connections (common/http/server.ts for
 * node:http, src/rpc/transport/uws/connections.ts for uWebSockets.js): the process's descriptors less HTTP_FD_RESERVE,
 * HTTP_MAX_CONNECTIONS_PER_CLIENT per client address and, where the stack does not count them itself (`countServer`),
 * HTTP_MAX_CONNECTIONS. Every refusal is counted and told to the log, naming the variable.
 */
export interface ConnectionGate {
  /**
   * A connection of `client` was accepted: true when it may stay (its slots are taken until `release`), false when a
   * cap refuses it (the caller closes it at once). `recount` is asked once before a per-client refusal, for a stack
   * that cannot tell which client's connection closed (it sets the true counts on `perClient`).
   */
  admit(client: string, recount?: () => void): boolean;
  /** The connection of `client` admitted earlier closed. */
  release(client: string): void;
  /**
   * A connection admitted earlier closed, its client unknown: the server's and the process's slots are given back, the
   * client's stays counted until a recount.
   */
  releaseUnknown(): void;
  /** A refusal made by the stack itself (node:http's maxConnections). */
  refused(by: Refused): void;
  readonly perClient: ClientQuota;
  /** Connections admitted and open now (counted only with `countServer`). */
  readonly open: number;
}

export function connectionGate(
  what: string,
  limits: HttpLimits,
  logger: Logger | undefined,
  countServer = false,
): ConnectionGate {
  const refused = refusalLog(what, limits, logger);
  const perClient = new ClientQuota(limits.maxConnectionsPerClient);
  let open = 0;
  const takeClient = (client: string, recount?: () => void): boolean => {
    if (perClient.take(client)) return true;
    recount?.();
    return perClient.take(client);
  };
  return {
    perClient,
    get open() {
      return open;
    },
    refused,
    admit(client, recount) {
      // Over a cap: refused at once (its descriptor freed), the client's other connections untouched.
      if (countServer && open >= limits.maxConnections) return (refused('server'), false);
      if (!descriptors.take()) return (refused('process'), false);
      if (!takeClient(client, recount)) {
        descriptors.release();
        return (refused('client'), false);
      }
      if (countServer) open++;
      return true;
    },
    release(client) {
      perClient.release(client);
      this.releaseUnknown();
    },
    releaseUnknown() {
      descriptors.release();
      if (countServer && open > 0) open--;
    },
  };
}

/** Counts refused connections by which limit refused them; tells the log at most once a minute, naming the variable. */
function refusalLog(what: string, limits: HttpLimits, logger: Logger | undefined): (by: Refused) => void {
  const dropped: Record<Refused, number> = { server: 0, client: 0, process: 0 };
  const why: Record<Refused, () => string> = {
    server: () => `open connections of this server at ${limits.maxConnections} (HTTP_MAX_CONNECTIONS)`,
    client: () =>
      `one client address at ${limits.maxConnectionsPerClient} open connections (HTTP_MAX_CONNECTIONS_PER_CLIENT): its newest are closed`,
    process: () =>
      `client connections of the process at ${descriptors.clientCap}: ulimit -n ${descriptors.limit} less ${descriptors.reserve} kept for our own connections (HTTP_FD_RESERVE)`,
  };
  let lastWarnAt = 0;
  return (by) => {
    dropped[by]++;
    const now = Date.now();
    if (logger && now - lastWarnAt >= 60_000) {
      lastWarnAt = now;
      logger.warn(
        { server: what, refused: by, droppedSinceStart: { ...dropped } },
        `connection limit reached: new connections are refused (${why[by]()})`,
      );
    }
  };
}
