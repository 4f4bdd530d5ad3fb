import type { Request } from 'express';
import { badRequest } from '../../common/errors.js';
import type { ReadModel } from '../read-model/model.js';
import type { TokenRepository } from '../repository.js';
import type { SupplyCache } from '../supply/job.js';
import { ResponseCache, send, type AnyRequest, type AnyResponse, type Representation } from './representation.js';

/** What every handler receives: data access, caches and the settings that shape responses. */
export interface HandlerContext {
  /** The database, for readiness only: every answer comes from `model`. */
  repo: TokenRepository;
  model: ReadModel;
  /** The clock of the price window (epoch ms); tests move it. */
  now(): number;
  supply: SupplyCache;
  cache: ResponseCache;
  nativeToken: string | undefined;
  cacheMaxAgeSeconds: number;
  /** Send through res.json so the validator can check our responses (tests). */
  validateResponses: boolean;
  /** Base URL of generated logos; known only once the server listens. */
  logoBase(): string;
}

export const MAX_ADDRESSES = 100;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * Splits a comma-separated `addresses` parameter. Every item counts toward the limit (duplicates too),
 * every item must be an address, and the first bad item is named. Returns distinct lower-case addresses
 * in request order.
 */
export function parseAddresses(raw: string): string[] {
  const items = raw.split(',');
  if (items.length > MAX_ADDRESSES) {
    throw badRequest(`addresses: ${items.length} items given, at most ${MAX_ADDRESSES} are allowed`, {
      errors: [{ path: 'query/addresses', message: `must have at most ${MAX_ADDRESSES} items` }],
    });
  }
  const out = new Set<string>();
  items.forEach((item, i) => {
    if (!ADDRESS.test(item)) {
      const shown = item.length > 64 ? `${item.slice(0, 61)}...` : item;
      throw badRequest(`addresses: item ${i + 1} '${shown}' is not a contract address (0x followed by 40 hexadecimal digits)`, {
        errors: [{ path: 'query/addresses', message: `item ${i + 1} '${shown}' is not a contract address` }],
      });
    }
    out.add(item.toLowerCase());
  });
  return [...out];
}

/** The validated path address, lower-cased (the validator has checked its pattern). */
export const pathAddress = (req: Request): string => String(req.params.contractAddress).toLowerCase();

/** Remembers `rep` under the request's raw URL for the fast path (see ResponseCache). */
export function rememberUrl(ctx: HandlerContext, req: AnyRequest, rep: Representation): void {
  if (!ctx.cache.enabled || ctx.validateResponses) return;
  rep.route ??= req.route?.path as string | undefined;
  ctx.cache.set(`url:${req.originalUrl}`, rep);
}


export { ResponseCache };

/**
 * Sends the answer `build` makes, through the response cache when it is on (keyed by operation and
 * normalized parameters; the read model's changes clear it). `build` throws HttpErrors for 404s.
 */
export function answerVia(ctx: HandlerContext, req: AnyRequest, res: AnyResponse, key: string, build: () => Representation): void {
  let rep = ctx.cache.get(key);
  if (!rep) {
    rep = build();
    ctx.cache.set(key, rep);
  }
  rememberUrl(ctx, req, rep);
  send(req, res, rep, { viaJson: ctx.validateResponses });
}
