import { createServer, type Server, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BaseError } from '../errors.js';

export class PortInUseError extends BaseError {
  override name = 'PortInUseError';
}

export interface RunningServer {
  server: Server;
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Listens on host:port (port 0 = any free port). A taken port fails with a message naming it, so an
 * operator sees "port 3000 on 127.0.0.1 is already in use" rather than a bare EADDRINUSE.
 */
export function listen(handler: RequestListener, host: string, port: number, what = 'server'): Promise<RunningServer> {
  const server = createServer(handler);
  server.keepAliveTimeout = 65_000; // longer than common load-balancer idle timeouts
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
