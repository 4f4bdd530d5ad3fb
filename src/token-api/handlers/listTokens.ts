import type { RequestHandler } from 'express';
import { cacheKey, parseAddresses, type HandlerContext, rememberUrl } from '../http/context.js';
import { jsonRepresentation, send } from '../http/representation.js';
import { toToken, type ListQuery, type OrderColumn } from '../repository.js';

/** GET /tokens (operationId listTokens): one page of tokens, filtered and totally ordered. */
export function listTokens(ctx: HandlerContext): RequestHandler {
  return async (req, res) => {
    const q = req.query as Record<string, unknown>;
    const addresses = typeof q.addresses === 'string' ? parseAddresses(q.addresses).sort() : undefined;
    const query: ListQuery = {
      page: Number(q.page ?? 1),
      limit: Number(q.limit ?? 50),
      isSecure: q.isSecure === undefined ? undefined : q.isSecure === true || q.isSecure === 'true',
      addresses,
      order: (q.order as OrderColumn | undefined) ?? 'fdv',
      sort: q.sort === 'asc' ? 'asc' : 'desc',
    };
    const rep = await ctx.cache.through(cacheKey('listTokens', { ...query }), async () => {
      const { rows, total } = await ctx.repo.listTokens(query);
      const base = ctx.logoBase();
      return jsonRepresentation(
        {
          data: rows.map((r) => toToken(r, base)),
          meta: { page: query.page, limit: query.limit, totalItemsCount: total, pagesCount: Math.ceil(total / query.limit) },
        },
        ctx.cacheMaxAgeSeconds,
      );
    });
    rememberUrl(ctx, req, rep);
    send(req, res, rep, { viaJson: ctx.validateResponses });
  };
}
