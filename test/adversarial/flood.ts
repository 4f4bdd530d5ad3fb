import { request, Agent } from 'node:http';

export interface FloodResult {
  /** Answers by HTTP status (0: the request failed at the socket). */
  counts: Map<number, number>;
  /** The first 429 seen: its Retry-After, content type and body. */
  sample: { retryAfter?: string; type?: string; body: string } | undefined;
}

/**
 * `concurrency` keep-alive loops sending GET `url` for `ms` with the given headers (an X-Forwarded-For names the
 * flooding address behind a trusted proxy): what one client that ignores every 429 does to an HTTP API.
 */
export async function floodGet(url: string, headers: Record<string, string>, concurrency: number, ms: number): Promise<FloodResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const counts = new Map<number, number>();
  let sample: FloodResult['sample'];
  const end = Date.now() + ms;
  const one = () =>
    new Promise<void>((resolve) => {
      const r = request(url, { agent, headers }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => {
          counts.set(res.statusCode!, (counts.get(res.statusCode!) ?? 0) + 1);
          if (res.statusCode === 429) sample ??= { retryAfter: res.headers['retry-after'] as string | undefined, type: res.headers['content-type'], body };
          resolve();
        });
      });
      r.on('error', () => (counts.set(0, (counts.get(0) ?? 0) + 1), resolve()));
      r.end();
    });
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) await one();
  }));
  agent.destroy();
  return { counts, sample };
}
