import { readFileSync } from 'node:fs';
import { createServer, type Server, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BaseError } from '../errors.js';
import { DEFAULT_HTTP_LIMITS, type HttpLimits } from '../config/http-env.js';
import type { Logger } from '../log.js';

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
export function listen(handler: RequestListener, host: string, port: number, what = 'server', options: ListenOptions = {}): Promise<RunningServer> {
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
  const fdLimit = openFilesLimit();
  if (fdLimit !== undefined && limits.maxConnections > fdLimit / 2) {
    options.logger?.warn(
      { server: what, maxConnections: limits.maxConnections, openFilesLimit: fdLimit },
      'HTTP_MAX_CONNECTIONS is above half the process descriptor limit (ulimit -n): a connection flood can still exhaust descriptors; lower it or raise the limit',
    );
  }
  let dropped = 0;
  let lastWarnAt = 0;
  server.on('drop', () => {
    dropped++;
    const now = Date.now();
    if (options.logger && now - lastWarnAt >= 60_000) {
      lastWarnAt = now;
      options.logger.warn({ server: what, maxConnections: limits.maxConnections, droppedSinceStart: dropped }, 'connection limit reached: new connections are refused (HTTP_MAX_CONNECTIONS)');
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') reject(new PortInUseError(`${what}: port ${port} on ${host} is already in use`, { cause: err }));
      else if (err.code === 'EACCES') reject(new PortInUseError(`${what}: no permission to listen on port ${port} on ${host}`, { cause: err }));
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

/** The soft limit on open descriptors (Linux; undefined elsewhere or when unlimited). */
function openFilesLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
