import type { RequestHandler } from 'express';
import { notFound } from '../../common/errors.js';
import { cacheKey, pathAddress, type HandlerContext, rememberUrl } from '../http/context.js';
import { jsonRepresentation, send } from '../http/representation.js';
import { toToken } from '../repository.js';

/** GET /tokens/{contractAddress} (operationId getToken). */
export function getToken(ctx: HandlerContext): RequestHandler {
  return async (req, res) => {
    const address = pathAddress(req);
    const rep = await ctx.cache.through(cacheKey('getToken', { address }), async () => {
      const row = await ctx.repo.getToken(address);
      if (!row) throw notFound(`No token with contract address ${address}`);
      return jsonRepresentation(toToken(row, ctx.logoBase()), ctx.cacheMaxAgeSeconds);
    });
    rememberUrl(ctx, req, rep);
    send(req, res, rep, { viaJson: ctx.validateResponses });
  };
}
