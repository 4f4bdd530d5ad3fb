import { request, Agent } from 'node:http';
import { connect, type Socket } from 'node:net';
import { expect } from 'vitest';

export interface FloodResult {
  /** Answers by HTTP status (0: the request failed at the socket). */
  counts: Map<number, number>;
  /** The first 429 seen: its Retry-After, content type and body. */
  sample: { retryAfter?: string; type?: string; body: string } | undefined;
  /** How long the flood took, start to last answer. */
  seconds: number;
}

/**
 * `concurrency` keep-alive loops sending GET `url` for `ms` with the given headers (an X-Forwarded-For names the
 * flooding address behind a trusted proxy): what one client that ignores every 429 does to an HTTP API. On a
 * loaded machine `ms` may pass before the flood has sent more than the limit's burst; it then goes on until the
 * first 429, for at most 30 s (the flood's size, not the machine's speed, decides whether the limit is reached).
 */
export async function floodGet(
  url: string,
  headers: Record<string, string>,
  concurrency: number,
  ms: number,
): Promise<FloodResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const counts = new Map<number, number>();
  let sample: FloodResult['sample'];
  const started = Date.now();
  const end = started + ms;
  const one = () =>
    new Promise<void>((resolve) => {
      const r = request(url, { agent, headers }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => {
          counts.set(res.statusCode!, (counts.get(res.statusCode!) ?? 0) + 1);
          if (res.statusCode === 429)
            sample ??= {
              retryAfter: res.headers['retry-after'] as string | undefined,
              type: res.headers['content-type'],
              body,
            };
          resolve();
        });
      });
      r.on('error', () => (counts.set(0, (counts.get(0) ?? 0) + 1), resolve()));
      r.end();
    });
  const bound = started + Math.max(ms, 30_000);
  const going = () => Date.now() < end || (!counts.has(429) && Date.now() < bound);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (going()) await one();
    }),
  );
  agent.destroy();
  return { counts, sample, seconds: (Date.now() - started) / 1000 };
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * What every flood of a per-address limit must show: only 200s and 429s; no more served than the bucket allows
 * (the burst plus the rate for the time elapsed, one second of slack), not the flood; the 429 a problem+json with
 * Retry-After whose detail names the limit and the variables that set it.
 */
export function expectRefusedPastLimit(
  result: FloodResult,
  limit: { perSecond: number; burst: number; variables: string },
): void {
  const { counts, sample, seconds } = result;
  expect([...counts.keys()].sort()).toEqual([200, 429]);
  expect(counts.get(200) ?? 0).toBeLessThanOrEqual(limit.burst + limit.perSecond * Math.ceil(seconds + 1));
  expect(sample!.type).toMatch(/^application\/problem\+json/);
  expect(Number(sample!.retryAfter)).toBeGreaterThanOrEqual(1);
  const problem = JSON.parse(sample!.body) as { status: number; detail: string };
  expect(problem.status).toBe(429);
  const detail = `rate limit of ${limit.perSecond} requests per second (burst ${limit.burst}) exceeded for this client (${limit.variables}); retry after `;
  expect(problem.detail).toMatch(new RegExp(`^${escapeRegExp(detail)}\\d+ s$`));
}

export interface IdleFlood {
  /** Sockets still open (held by the server). */
  open(): number;
  release(): void;
}

/**
 * Opens `count` idle TCP connections (no byte sent) from `localAddress` (default: the system's choice, 127.0.0.1
 * on loopback) and resolves once each has connected or failed.
 */
export async function idleFlood(url: string, count: number, localAddress?: string): Promise<IdleFlood> {
  const { hostname, port } = new URL(url);
  const sockets: Socket[] = [];
  const closed = new Set<Socket>();
  await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<void>((resolve) => {
          const s = connect({ port: Number(port), host: hostname, localAddress });
          sockets.push(s);
          s.on('error', () => undefined);
          s.once('close', () => {
            closed.add(s);
            resolve();
          });
          s.once('connect', () => resolve());
        }),
    ),
  );
  return { open: () => sockets.length - closed.size, release: () => sockets.forEach((s) => s.destroy()) };
}

/**
 * A brand-new client's request on its own connection (from `localAddress` when given, e.g. 127.0.0.2: Linux routes
 * all of 127/8 to loopback, so it is another client address): its status, or the error when the connection was
 * refused or reset.
 */
export function freshRequest(
  url: string,
  init: { method?: string; body?: string; headers?: Record<string, string>; localAddress?: string } = {},
): Promise<number | string> {
  return new Promise((resolve) => {
    const r = request(
      url,
      {
        method: init.method ?? 'GET',
        agent: false,
        localAddress: init.localAddress,
        timeout: 10_000,
        headers: { connection: 'close', ...init.headers },
      },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', (err) => resolve(err.message));
      },
    );
    r.on('timeout', () => r.destroy(new Error('no answer within 10 s')));
    r.on('error', (err) => resolve(err.message));
    r.end(init.body);
  });
}
