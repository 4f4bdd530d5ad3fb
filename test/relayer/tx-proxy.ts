import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transaction } from 'ethers';

export interface TxProxy {
  url: string;
  /** JSON-RPC calls seen per method (single calls; batches are passed through uncounted). */
  calls(method: string): number;
  close(): Promise<void>;
}

/**
 * A JSON-RPC proxy in front of `upstream` for the relayer's tests: every eth_sendRawTransaction is shown to
 * `swallow`, and when it says so the proxy answers with the transaction's hash and never forwards it, as a
 * node (or a path to it) that dropped the transaction would look. `answer` may answer other calls itself.
 * Everything else is piped through.
 */
export async function startTxProxy(
  upstream: string,
  swallow: (tx: Transaction) => boolean,
  /** Answers a single call itself when it returns a promise (of the result), as a node in some state would. */
  answer: (method: string, params: unknown[]) => Promise<unknown> | undefined = () => undefined,
): Promise<TxProxy> {
  const target = new URL(upstream);
  const calls = new Map<string, number>();
  const body = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };
  const server: Server = createServer((req, res) => {
    void body(req).then((raw) => {
      const parsed = JSON.parse(raw.toString('utf8')) as
        { id: unknown; method: string; params?: unknown[] } | unknown[];
      if (!Array.isArray(parsed)) {
        calls.set(parsed.method, (calls.get(parsed.method) ?? 0) + 1);
        const own = answer(parsed.method, parsed.params ?? []);
        if (own) {
          void own.then(
            (result) =>
              res
                .setHeader('content-type', 'application/json')
                .end(JSON.stringify({ jsonrpc: '2.0', id: parsed.id, result })),
            () => res.destroy(),
          );
          return;
        }
        if (parsed.method === 'eth_sendRawTransaction') {
          const tx = Transaction.from(String(parsed.params?.[0]));
          if (swallow(tx)) {
            res.setHeader('content-type', 'application/json');
            res.end(JSON.stringify({ jsonrpc: '2.0', id: parsed.id, result: tx.hash }));
            return;
          }
        }
      }
      const up = request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
        },
        (r) => {
          res.writeHead(r.statusCode ?? 502, { 'content-type': 'application/json' });
          r.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      up.end(raw);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: (method) => calls.get(method) ?? 0,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
