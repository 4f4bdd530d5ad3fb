import type { RequestHandler } from 'express';
import { notFound } from '../../common/errors.js';
import { cacheKey, pathAddress, type HandlerContext, rememberUrl } from '../http/context.js';
import { jsonRepresentation, send } from '../http/representation.js';

const DAY_MS = 24 * 3_600_000;

/** GET /prices/{contractAddress} (operationId getTokenPrices): hourly points of the last 24 h, oldest first. */
export function getTokenPrices(ctx: HandlerContext): RequestHandler {
  return async (req, res) => {
    const address = pathAddress(req);
    const rep = await ctx.cache.through(cacheKey('getTokenPrices', { address }), async () => {
      if (!(await ctx.repo.tokenExists(address))) throw notFound(`No token with contract address ${address}`);
      const prices = await ctx.repo.prices([address], new Date(Date.now() - DAY_MS));
      return jsonRepresentation(prices.get(address) ?? [], ctx.cacheMaxAgeSeconds);
    });
    rememberUrl(ctx, req, rep);
    send(req, res, rep, { viaJson: ctx.validateResponses });
  };
}
