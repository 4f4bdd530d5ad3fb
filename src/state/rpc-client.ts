import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/**
 * A minimal JSON-RPC client for the ingest's two hot calls (block headers and prestate traces): one
 * keep-alive connection pool, the body decoded by Buffer's native UTF-8 decoder and JSON.parse. Through
 * ethers' provider the traces, the largest answers the state manager reads, went through its JavaScript
 * UTF-8 decoder, which under `l2stack dev` competed for the one thread every service of the process shares.
 */
export interface JsonRpcCaller {
  call<T>(method: string, params: unknown[]): Promise<T>;
  close(): void;
}

export class JsonRpcCallError extends Error {
  override name = 'JsonRpcCallError';
  constructor(
    message: string,
    readonly code: number | undefined,
  ) {
    super(message);
  }
}

export function createJsonRpcCaller(url: string, options: { timeoutMs?: number } = {}): JsonRpcCaller {
  const target = new URL(url);
  const https = target.protocol === 'https:';
  const agent = https ? new HttpsAgent({ keepAlive: true, maxSockets: 16 }) : new HttpAgent({ keepAlive: true, maxSockets: 16 });
  const send = https ? httpsRequest : httpRequest;
  const timeoutMs = options.timeoutMs ?? 60_000;
  let id = 0;
  return {
    call<T>(method: string, params: unknown[]): Promise<T> {
      const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }));
      return new Promise<T>((resolve, reject) => {
        const req = send(target, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length }, timeout: timeoutMs }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: { result?: T; error?: { code?: number; message?: string } };
            try {
              parsed = JSON.parse(text) as typeof parsed;
            } catch {
              reject(new JsonRpcCallError(`${method}: HTTP ${res.statusCode ?? '?'} with a body that is not JSON: ${text.slice(0, 200)}`, undefined));
              return;
            }
            if (parsed.error) reject(new JsonRpcCallError(`${method}: ${parsed.error.message ?? 'error'} (code ${parsed.error.code ?? '?'})`, parsed.error.code));
            else if (res.statusCode !== 200) reject(new JsonRpcCallError(`${method}: HTTP ${res.statusCode ?? '?'}`, undefined));
            else resolve(parsed.result as T);
          });
        });
        req.on('timeout', () => req.destroy(new Error(`${method}: no answer from ${target.host} within ${timeoutMs} ms`)));
        req.on('error', reject);
        req.end(body);
      });
    },
    close: () => agent.destroy(),
  };
}
