import { existsSync, readFileSync } from 'node:fs';
import type { HttpResponse, TemplatedApp, WebSocket } from 'uwebsockets';
import type { HttpLimits } from '../../../common/config/http-env.js';
import { connectionGate, type ConnectionGate } from '../../../common/http/connection-gate.js';
import { formatPeerAddress } from '../../../common/http/peer-address.js';
import { reportDescriptors } from '../../../common/http/server.js';
import type { Logger } from '../../../common/log.js';

/**
 * How often at most the per-client counts are read again from the kernel (only when a client is at its cap and
 * connections closed since).
 */
const RECOUNT_EVERY_MS = 1_000;

/** A peer's address as both stacks name a client (peer-address.ts), from uWS's binary form. */
export const peerOf = (s: HttpResponse | WebSocket<unknown>): string =>
  formatPeerAddress(new Uint8Array(s.getRemoteAddress()));

/** The tables of the kernel's TCP sockets (this network namespace's), IPv4 then IPv6. */
const TCP_TABLES = ['/proc/self/net/tcp', '/proc/self/net/tcp6'];

/**
 * Whether the per-client counts can be read again from the kernel (Linux): without it, HTTP_MAX_CONNECTIONS_PER_CLIENT
 * cannot be held on uWS.
 */
export const canRecount = (): boolean => existsSync(TCP_TABLES[0]!);

/** An address of /proc/net/tcp{,6}: 32-bit words in hex, each in the machine's (little-endian) byte order. */
function procAddress(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let w = 0; w < hex.length / 8; w++)
    for (let b = 0; b < 4; b++) bytes[w * 4 + b] = parseInt(hex.slice(w * 8 + (3 - b) * 2, w * 8 + (4 - b) * 2), 16);
  return bytes;
}

/**
 * The connections each client holds on `port` now, read from the kernel: the sockets with a descriptor (inode ≠ 0:
 * accepted, not yet closed by us; a connection still waiting to be accepted has none), whatever their state, the
 * listener aside.
 */
export function connectionsByClient(port: number): Map<string, number> {
  const counts = new Map<string, number>();
  const portHex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const table of TCP_TABLES) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !f[1]!.endsWith(portHex) || f[3] === '0A' || f[9] === '0') continue;
      const client = formatPeerAddress(procAddress(f[2]!.slice(0, f[2]!.indexOf(':'))));
      counts.set(client, (counts.get(client) ?? 0) + 1);
    }
  }
  return counts;
}

/** The uWS side of the connection caps: what uws/ws.ts gives back when a WebSocket closes. */
export interface UwsConnections {
  readonly gate: ConnectionGate;
  /** A socket upgraded to WebSocket closed (uWS reports no close of it to the filter). */
  closedWebSocket(client: string): void;
}

/**
 * HTTP_MAX_CONNECTIONS, HTTP_MAX_CONNECTIONS_PER_CLIENT and HTTP_FD_RESERVE on uWebSockets.js, with the accounting of
 * node:http's listener (common/http/connection-gate.ts) and the same log line. App.filter reports each accepted
 * connection (count > 0, its peer known) and each close (count < 0): a connection over a cap is closed inside the
 * filter (`res.close()`, whose own close report comes at once and is not counted). A close is reported after uWS has
 * closed the descriptor, so it names no peer: the server's and the process's slots are given back at once, the
 * client's when a client at its cap connects again and its count is read from the kernel (at most once a second).
 * A socket upgraded to WebSocket gets no close report: uws/ws.ts gives its slots back when it closes.
 */
export function holdConnectionCaps(
  app: TemplatedApp,
  what: string,
  limits: HttpLimits,
  logger: Logger,
  port: () => number,
): UwsConnections {
  reportDescriptors(what, limits, logger);
  const gate = connectionGate(what, limits, logger, true);
  let unattributed = 0;
  let recountedAt = -Infinity;
  let admitting = '';
  const recount = () => {
    const now = Date.now();
    if (unattributed === 0 || now - recountedAt < RECOUNT_EVERY_MS) return;
    recountedAt = now;
    unattributed = 0;
    const counts = connectionsByClient(port());
    // The connection being admitted is in the kernel's table already: counted by take() after this.
    const self = counts.get(admitting);
    if (self !== undefined) counts.set(admitting, self - 1);
    gate.perClient.reset(counts);
  };
  let refusing = false;
  app.filter((res, count) => {
    if (refusing) return;
    if (Number(count) < 0) {
      unattributed++;
      return gate.releaseUnknown();
    }
    admitting = peerOf(res);
    if (gate.admit(admitting, recount)) return;
    refusing = true;
    try {
      res.close();
    } finally {
      refusing = false;
    }
  });
  return { gate, closedWebSocket: (client) => gate.release(client) };
}
