import type { RequestHandler } from 'express';
import { cacheKey, parseAddresses, type HandlerContext, rememberUrl } from '../http/context.js';
import { jsonRepresentation, send } from '../http/representation.js';
import type { Price } from '../repository.js';

const DAY_MS = 24 * 3_600_000;

/**
 * GET /prices?addresses= (operationId getPrices): one key per distinct requested address (lower case), in
 * request order; unknown tokens and tokens without prices in the window map to [].
 */
export function getPrices(ctx: HandlerContext): RequestHandler {
  return async (req, res) => {
    const addresses = parseAddresses(String((req.query as Record<string, unknown>).addresses));
    const rep = await ctx.cache.through(cacheKey('getPrices', { addresses }), async () => {
      const found = await ctx.repo.prices(addresses, new Date(Date.now() - DAY_MS));
      const body: Record<string, Price[]> = {};
      for (const a of addresses) body[a] = found.get(a) ?? [];
      return jsonRepresentation(body, ctx.cacheMaxAgeSeconds);
    });
    rememberUrl(ctx, req, rep);
    send(req, res, rep, { viaJson: ctx.validateResponses });
  };
}
