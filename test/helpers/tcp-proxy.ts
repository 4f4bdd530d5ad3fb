import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on a fixed local port in front of `target` (host:port), for outage tests: `stop()` closes
 * the listener and destroys every open connection (clients see resets, then refused connections, as when
 * a node goes down); `start()` listens again on the same port.
 */
export interface TcpProxy {
  port: number;
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(
  target: { host: string; port: number },
  options: { host?: string; port?: number } = {},
): Promise<TcpProxy> {
  const host = options.host ?? '127.0.0.1';
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  let server: Server | undefined;
  let port = options.port ?? 0;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((client) => {
        track(client);
        const upstream = connect(target.port, target.host);
        track(upstream);
        // Either side failing or closing ends both, so a reset propagates like a real outage.
        const end = () => {
          client.destroy();
          upstream.destroy();
        };
        client.on('error', end).on('close', end);
        upstream.on('error', end).on('close', end);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      s.once('error', reject);
      s.listen(port, host, () => {
        s.off('error', reject);
        port = (s.address() as { port: number }).port;
        server = s;
        resolve();
      });
    });

  const stop = async () => {
    const s = server;
    server = undefined;
    if (!s) return;
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  await listen();
  return {
    get port() {
      return port;
    },
    get url() {
      return `http://${host}:${port}`;
    },
    start: async () => {
      if (!server) await listen();
    },
    stop,
    close: stop,
  };
}
