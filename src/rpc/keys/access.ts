import type { IncomingMessage } from 'node:http';
import type { CallResult } from '../dispatcher.js';
import type { CallScope } from '../context.js';
import { RpcCodes } from '../errors.js';
import type { RateLimiter, RateLimitSettings } from '../ratelimit.js';
import type { KeyRegistry } from './registry.js';

/** Who a request is for rate limiting and method access: the anonymous public tier, or one API key. */
export interface Access {
  /** The rate-limit identity: the client address, or "key:<id>" (every replica shares a key's bucket). */
  client: string;
  limiter: RateLimiter;
  /** Methods this key may call; undefined: every method the endpoint serves. */
  allowed?: ReadonlySet<string>;
  keyId?: string;
}

export type AccessDecision = { ok: true; access: Access } | { ok: false; status: 401; code: number; message: string };

const KEY_PATH = /^\/v1\/([^/?#]+)\/?(?:[?#].*)?$/;

/** The key a request carries: `POST /v1/<key>` (or ws://host/v1/<key>) or the x-api-key header. */
export function requestKey(req: IncomingMessage): string | undefined {
  const fromPath = KEY_PATH.exec(req.url ?? '')?.[1];
  if (fromPath !== undefined) return decodeURIComponent(fromPath);
  const header = req.headers['x-api-key'];
  return typeof header === 'string' && header !== '' ? header : undefined;
}

/** Whether the URL is one the JSON-RPC route serves: `/` or `/v1/<key>` (query strings allowed). */
export const isRpcPath = (url: string | undefined): boolean => url === '/' || url?.startsWith('/?') === true || KEY_PATH.test(url ?? '');

/**
 * Resolves each request's access: no key → the public tier keyed by address; a live key → its own bucket
 * (its rate and burst, or the public ones) and allow-list; an unknown or revoked key → HTTP 401 naming it,
 * so a typo is not silently served at anonymous limits.
 */
export class KeyAccess {
  private readonly limiters = new Map<string, RateLimiter>();

  constructor(
    private readonly registry: KeyRegistry,
    private readonly publicLimiter: RateLimiter,
    private readonly publicSettings: RateLimitSettings,
    private readonly makeLimiter: (settings: RateLimitSettings) => RateLimiter,
  ) {}

  async resolve(req: IncomingMessage, address: string): Promise<AccessDecision> {
    const key = requestKey(req);
    if (key === undefined) return { ok: true, access: { client: address, limiter: this.publicLimiter } };
    const found = await this.registry.lookup(key);
    if (found.kind === 'unknown') return { ok: false, status: 401, code: RpcCodes.Server, message: 'unknown API key: check the key in the URL (/v1/<key>) or the x-api-key header' };
    if (found.kind === 'revoked') return { ok: false, status: 401, code: RpcCodes.Server, message: `API key ${found.record.id} (${found.record.name}) was revoked` };
    const r = found.record;
    const perSecond = r.ratePerSecond ?? this.publicSettings.perSecond;
    const burst = r.burst ?? (r.ratePerSecond !== undefined ? Math.max(1, r.ratePerSecond * 2) : this.publicSettings.burst);
    const settingsKey = `${perSecond}/${burst}`;
    let limiter = this.limiters.get(settingsKey);
    if (!limiter) {
      limiter = this.makeLimiter({ perSecond, burst });
      this.limiters.set(settingsKey, limiter);
    }
    return { ok: true, access: { client: `key:${r.id}`, limiter, allowed: r.methods ? new Set(r.methods) : undefined, keyId: r.id } };
  }

  /** Limiters made for keys (their idle buckets are swept with the public one's). */
  keyLimiters(): RateLimiter[] {
    return [...this.limiters.values()];
  }
}

/** A dispatcher that refuses, per call, the methods outside a key's allow-list. */
export function allowListCalls(
  allowed: ReadonlySet<string>,
  keyId: string,
  next: (method: string, params: unknown, scope: CallScope) => Promise<CallResult>,
): { call(method: string, params: unknown, scope?: CallScope): Promise<CallResult> } {
  return {
    call(method, params, scope = {}) {
      if (method !== 'rpc.discover' && !allowed.has(method)) {
        return Promise.resolve({ error: { code: RpcCodes.MethodNotFound, message: `method ${method} is not allowed for API key ${keyId} (it may call: ${[...allowed].join(', ')})` } });
      }
      return next(method, params, scope);
    },
  };
}
