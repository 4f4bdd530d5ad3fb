import { createServer, type Server, type RequestListener } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { BaseError } from '../errors.js';
import { DEFAULT_HTTP_LIMITS, type HttpLimits } from '../config/http-env.js';
import type { Logger } from '../log.js';
import { connectionGate } from './connection-gate.js';
import { descriptors } from './descriptors.js';

export class PortInUseError extends BaseError {
  override name = 'PortInUseError';
}

export interface RunningServer {
  server: Server;
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface ListenOptions {
  /** Connection limits (HTTP_* variables); the defaults of src/common/config/http-env.ts when absent. */
  limits?: HttpLimits;
  /** Told (at most once a minute) when connections are refused at the limit. */
  logger?: Logger;
}

/**
 * Listens on host:port (port 0 = any free port). A taken port fails with a message naming it, so an
 * operator sees "port 3000 on 127.0.0.1 is already in use" rather than a bare EADDRINUSE.
 *
 * Every server gets the same connection limits: beyond maxConnections a new socket is closed as soon as
 * it is accepted (its descriptor is released at once, clients already connected are unaffected), and
 * clients that send headers or a body too slowly are cut (408) so idle or trickling sockets cannot pile up.
 */
export function listen(
  handler: RequestListener,
  host: string,
  port: number,
  what = 'server',
  options: ListenOptions = {},
): Promise<RunningServer> {
  const limits = options.limits ?? DEFAULT_HTTP_LIMITS;
  const server = createServer(
    // Node checks the headers and request timeouts only this often (default 30 s), which would let a
    // trickling client outlive a short timeout by far.
    { connectionsCheckingInterval: Math.max(250, Math.min(5_000, Math.floor(limits.headersTimeoutMs / 4))) },
    handler,
  );
  server.maxConnections = limits.maxConnections;
  server.headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  reportDescriptors(what, limits, options.logger);
  const gate = connectionGate(what, limits, options.logger);
  server.on('drop', () => gate.refused('server'));
  server.on('connection', (socket: Socket) => {
    const client = socket.remoteAddress ?? 'unknown';
    if (!gate.admit(client)) return void socket.destroy();
    socket.once('close', () => gate.release(client));
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE')
        reject(new PortInUseError(`${what}: port ${port} on ${host} is already in use`, { cause: err }));
      else if (err.code === 'EACCES')
        reject(new PortInUseError(`${what}: no permission to listen on port ${port} on ${host}`, { cause: err }));
      else reject(err);
    });
    server.listen(port, host, () => {
      const actual = (server.address() as AddressInfo).port;
      const shownHost = host.includes(':') ? `[${host}]` : host;
      resolve({
        server,
        port: actual,
        url: `http://${shownHost}:${actual}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeIdleConnections();
            setTimeout(() => server.closeAllConnections(), 2_000).unref();
          }),
      });
    });
  });
}

/**
 * Keeps HTTP_FD_RESERVE out of the clients' reach, and says in one line at start the descriptor limit, the reserve
 * and how many client connections the process accepts (a warning when the limit is too low for the caps).
 */
export function reportDescriptors(what: string, limits: HttpLimits, logger: Logger | undefined): void {
  descriptors.keep(limits.fdReserve);
  if (!logger) return;
  const { limit, reserve, clientCap, reserveCut } = descriptors;
  const cap = Number.isFinite(clientCap) ? clientCap : 'unbounded';
  const fields = {
    server: what,
    openFilesLimit: limit ?? 'unlimited',
    fdReserve: reserve,
    clientConnectionsMax: cap,
    maxConnections: limits.maxConnections,
    maxConnectionsPerClient: limits.maxConnectionsPerClient,
  };
  const line = `file descriptors: ${limit ?? 'no'} limit (ulimit -n), ${reserve} kept for our own database and chain connections (HTTP_FD_RESERVE), client connections of the process at most ${cap}`;
  const problems = [
    ...(reserveCut ? [`HTTP_FD_RESERVE (${limits.fdReserve}) cut to half the limit`] : []),
    ...(clientCap < limits.maxConnections ? [`fewer than HTTP_MAX_CONNECTIONS (${limits.maxConnections})`] : []),
  ];
  if (problems.length > 0) logger.warn(fields, `${line}; ${problems.join(', ')}: raise ulimit -n`);
  else logger.info(fields, line);
}
