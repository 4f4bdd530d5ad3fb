import type { RequestHandler } from 'express';
import { clientAddress } from './client-address.js';
import { sendProblem } from './problem.js';

export interface HttpRateLimit {
  /** Requests a second per client; 0 turns the limit off. */
  perSecond: number;
  /** Requests a client may send at once after a quiet spell. */
  burst: number;
  /** Proxies in front of this server whose X-Forwarded-For is trusted (0: the socket address is the client). */
  trustedProxyHops: number;
  /** The variable names, so a refusal says what to change. */
  variable: string;
}

/** A service's limit from its variables: `burst` unset is twice the rate (at least 1). */
export const rateLimitFrom = (
  perSecond: number,
  burst: number | undefined,
  trustedProxyHops: number,
): Omit<HttpRateLimit, 'variable'> => ({ perSecond, burst: burst ?? Math.max(1, perSecond * 2), trustedProxyHops });

/** Buckets kept at most; past it the full ones are dropped first (they carry no information). */
const MAX_CLIENTS = 100_000;

/**
 * A token bucket per client address in this process, in front of routes that cost the database: a flood from one
 * address is answered 429 (problem+json, Retry-After naming the limit) before it reaches a handler, so it cannot
 * take the process's thread or database connections from the others or from the relayer's own work.
 */
export function rateLimitMiddleware(limit: HttpRateLimit): RequestHandler & { clients(): number } {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const refill = (b: { tokens: number; at: number }, now: number) =>
    Math.min(limit.burst, b.tokens + ((now - b.at) / 1000) * limit.perSecond);
  const sweep = (now: number) => {
    for (const [k, b] of buckets) if (refill(b, now) >= limit.burst) buckets.delete(k);
  };
  const handler: RequestHandler = (req, res, next) => {
    if (limit.perSecond === 0) return next();
    const client = clientAddress(req, limit.trustedProxyHops);
    const now = performance.now();
    let b = buckets.get(client);
    if (!b) {
      if (buckets.size >= MAX_CLIENTS) sweep(now);
      b = { tokens: limit.burst, at: now };
      buckets.set(client, b);
    }
    b.tokens = refill(b, now);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return next();
    }
    const retryAfter = Math.max(1, Math.ceil((1 - b.tokens) / limit.perSecond));
    res.setHeader('retry-after', String(retryAfter));
    sendProblem(res, {
      status: 429,
      detail: `rate limit of ${limit.perSecond} requests per second (burst ${limit.burst}) exceeded for this client (${limit.variable}); retry after ${retryAfter} s`,
      instance: req.originalUrl,
    });
  };
  return Object.assign(handler, { clients: () => buckets.size });
}
