import type { RequestHead } from '../../common/http/request-head.js';
import type { CallResult, CallTarget } from '../types.js';
import { RpcCodes } from '../errors.js';
import type { RateLimiter, RateLimitSettings } from '../ratelimit.js';
import type { KeyFailureLimiter } from './failures.js';
import type { KeyRegistry } from './registry.js';
import type { ApiKeyRecord } from './store.js';

/** Who a request is for rate limiting and method access: the anonymous public tier, or one API key. */
export interface Access {
  /** The rate-limit identity: the client address, or "key:<id>" (every replica shares a key's bucket). */
  client: string;
  limiter: RateLimiter;
  /** Methods this key may call; undefined: every method the endpoint serves. */
  allowed?: ReadonlySet<string>;
  keyId?: string;
}

export type AccessDecision =
  | { ok: true; access: Access }
  | { ok: false; status: 401 | 429; code: number; message: string; data?: unknown; retryAfterSeconds?: number };

const KEY_PATH = /^\/v1\/([^/?#]+)\/?(?:[?#].*)?$/;
/** Longer than any key we issue (47 characters) by far; longer ones are not decoded, hashed or echoed. */
const MAX_KEY_CHARS = 256;

/** The key a request presents: none (anonymous), a key, or a path that cannot hold one. */
export type PresentedKey = { kind: 'none' } | { kind: 'key'; key: string } | { kind: 'malformed'; reason: string };

/** The key a request carries: `POST /v1/<key>` (or ws://host/v1/<key>) or the x-api-key header. */
const NONE: PresentedKey = { kind: 'none' };

export function requestKey(req: Pick<RequestHead, 'url' | 'header'>): PresentedKey {
  // POST / without a key header: nearly every request, answered without the pattern or an allocation.
  const header = req.header('x-api-key');
  if (req.url === '/' && (header === undefined || header === '')) return NONE;
  const fromPath = KEY_PATH.exec(req.url)?.[1];
  if (fromPath !== undefined) {
    if (fromPath.length > MAX_KEY_CHARS)
      return { kind: 'malformed', reason: `longer than ${MAX_KEY_CHARS} characters` };
    // A client's bad percent-encoding (/v1/%ZZ) is its mistake, not ours: 401, never a thrown URIError.
    try {
      return { kind: 'key', key: decodeURIComponent(fromPath) };
    } catch {
      return { kind: 'malformed', reason: 'not valid percent-encoding' };
    }
  }
  if (header === undefined || header === '') return NONE;
  return header.length > MAX_KEY_CHARS
    ? { kind: 'malformed', reason: `longer than ${MAX_KEY_CHARS} characters` }
    : { kind: 'key', key: header };
}

/** Whether the URL is one the JSON-RPC route serves: `/` or `/v1/<key>` (query strings allowed). */
export const isRpcPath = (url: string | undefined): boolean =>
  url === '/' || url?.startsWith('/?') === true || KEY_PATH.test(url ?? '');

const unknownKey = 'unknown API key: check the key in the URL (/v1/<key>) or the x-api-key header';

/**
 * Resolves each request's access: no key → the public tier keyed by address; a live key → its own bucket (its rate and
 * burst, or the public ones) and allow-list; an unknown, revoked or malformed key → HTTP 401 naming the problem (never
 * the key), so a typo is not silently served at anonymous limits. Failed keys are limited per client address
 * (failures.ts): past the allowance → HTTP 429 with Retry-After, answered from memory without a database read.
 */
export class KeyAccess {
  private readonly limiters = new Map<string, RateLimiter>();

  constructor(
    private readonly registry: KeyRegistry,
    private readonly publicLimiter: RateLimiter,
    private readonly publicSettings: RateLimitSettings,
    private readonly makeLimiter: (settings: RateLimitSettings) => RateLimiter,
    private readonly failures: KeyFailureLimiter,
  ) {}

  async resolve(req: Pick<RequestHead, 'url' | 'header'>, address: string): Promise<AccessDecision> {
    const presented = requestKey(req);
    if (presented.kind === 'none') return { ok: true, access: { client: address, limiter: this.publicLimiter } };
    const remembered = presented.kind === 'key' ? this.registry.cached(presented.key) : undefined;
    if (remembered?.kind === 'ok') return { ok: true, access: this.grant(remembered.record) };
    // Anything else may fail: its token is taken before the lookup (refunded if the key is live), so a concurrent flood
    // of wrong keys cannot reach the database more often than the allowance.
    const retryAfter = this.failures.take(address);
    const seenLive = retryAfter > 0 && presented.kind === 'key' && this.registry.seenLive(presented.key);
    if (retryAfter > 0 && !seenLive) {
      const limit = this.failures.options.perMinute;
      return {
        ok: false,
        status: 429,
        code: RpcCodes.LimitExceeded,
        message: `too many failed API keys from this client: at most ${limit} a minute (RPC_KEY_FAILURES_PER_MINUTE); retry after ${retryAfter} s`,
        data: { limit, retryAfter },
        retryAfterSeconds: retryAfter,
      };
    }
    if (presented.kind === 'malformed')
      return {
        ok: false,
        status: 401,
        code: RpcCodes.Server,
        message: `malformed API key (${presented.reason}): send the key as /v1/<key> or in the x-api-key header`,
      };
    const found = remembered ?? (await this.registry.lookup(presented.key));
    if (found.kind === 'ok') {
      if (!seenLive) this.failures.refund(address);
      return { ok: true, access: this.grant(found.record) };
    }
    if (found.kind === 'unknown') return { ok: false, status: 401, code: RpcCodes.Server, message: unknownKey };
    return {
      ok: false,
      status: 401,
      code: RpcCodes.Server,
      message: `API key ${found.record.id} (${found.record.name}) was revoked`,
    };
  }

  private grant(r: ApiKeyRecord): Access {
    const perSecond = r.ratePerSecond ?? this.publicSettings.perSecond;
    const burst =
      r.burst ?? (r.ratePerSecond !== undefined ? Math.max(1, r.ratePerSecond * 2) : this.publicSettings.burst);
    const settingsKey = `${perSecond}/${burst}`;
    let limiter = this.limiters.get(settingsKey);
    if (!limiter) {
      limiter = this.makeLimiter({ perSecond, burst });
      this.limiters.set(settingsKey, limiter);
    }
    return { client: `key:${r.id}`, limiter, allowed: r.methods ? new Set(r.methods) : undefined, keyId: r.id };
  }
}

/** A dispatcher that refuses, per call, the methods outside a key's allow-list. */
export function allowListCalls(allowed: ReadonlySet<string>, keyId: string, next: CallTarget): CallTarget {
  return {
    call(method, params, scope = {}) {
      if (method !== 'rpc.discover' && !allowed.has(method)) {
        return Promise.resolve<CallResult>({
          error: {
            code: RpcCodes.MethodNotFound,
            message: `method ${method} is not allowed for API key ${keyId} (it may call: ${[...allowed].join(', ')})`,
          },
        });
      }
      return next.call(method, params, scope);
    },
  };
}
