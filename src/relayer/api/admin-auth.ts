import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { clientAddress } from '../../common/http/client-address.js';
import { sendProblem } from '../../common/http/problem.js';

export interface AdminAuthOptions {
  /** API_ADMIN_TOKEN; undefined turns the admin routes off (403). */
  token: string | undefined;
  trustedProxyHops: number;
  /** Failed attempts one client address may make per window before it is answered 429. */
  maxFailures?: number;
  windowMs?: number;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * The admin routes' gate, in front of the spec's validation. The token is compared as SHA-256 digests with
 * timingSafeEqual, so neither its content nor its length shows in the time a refusal takes. A client that got
 * `maxFailures` refusals within `windowMs` is answered 429 (Retry-After) without a comparison until the window
 * ends: guessing a 32-character secret over the network is then hopeless. The token is never logged.
 */
export function adminAuth(options: AdminAuthOptions): RequestHandler {
  const expected = options.token === undefined ? undefined : digest(options.token);
  const maxFailures = options.maxFailures ?? 5;
  const windowMs = options.windowMs ?? 60_000;
  const failures = new Map<string, { count: number; since: number }>();
  return (req, res, next) => {
    if (req.method !== 'POST') return next();
    const instance = req.originalUrl;
    if (expected === undefined)
      return sendProblem(res, {
        status: 403,
        title: 'Forbidden',
        detail: 'admin API disabled (API_ADMIN_TOKEN is not set)',
        instance,
      });
    const client = clientAddress(req, options.trustedProxyHops);
    const now = Date.now();
    let f = failures.get(client);
    if (f && now - f.since >= windowMs) {
      failures.delete(client);
      f = undefined;
    }
    if (f && f.count >= maxFailures) {
      const retryAfter = Math.max(1, Math.ceil((f.since + windowMs - now) / 1000));
      res.setHeader('retry-after', String(retryAfter));
      return sendProblem(res, {
        status: 429,
        detail: `too many failed admin authentications from this client (${maxFailures} per ${windowMs / 1000} s); retry after ${retryAfter} s`,
        instance,
      });
    }
    const header = req.headers.authorization ?? '';
    const match = /^Bearer (.+)$/i.exec(header);
    if (match && timingSafeEqual(digest(match[1]!), expected)) return next();
    if (f) f.count++;
    else failures.set(client, { count: 1, since: now });
    // Bounded: a flood from many addresses cannot grow the map without end (the oldest windows go first).
    if (failures.size > 10_000) for (const [k, v] of failures) if (now - v.since >= windowMs) failures.delete(k);
    res.setHeader('www-authenticate', 'Bearer');
    sendProblem(res, { status: 401, title: 'Unauthorized', detail: 'missing or wrong admin token', instance });
  };
}
