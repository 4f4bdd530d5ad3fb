import type { RequestHandler } from 'express';
import { answerVia, parseAddresses, type HandlerContext } from '../http/context.js';
import { listTokensAnswer } from '../http/answers.js';
import type { ListQuery, OrderColumn } from '../repository.js';

/** The validated query of listTokens with its defaults applied (addresses sorted: order does not matter). */
export function listQuery(q: Record<string, unknown>): ListQuery {
  return {
    page: Number(q.page ?? 1),
    limit: Number(q.limit ?? 50),
    isSecure: q.isSecure === undefined ? undefined : q.isSecure === true || q.isSecure === 'true',
    addresses: typeof q.addresses === 'string' ? parseAddresses(q.addresses).sort() : undefined,
    order: (q.order as OrderColumn | undefined) ?? 'fdv',
    sort: q.sort === 'asc' ? 'asc' : 'desc',
  };
}

/** GET /tokens (operationId listTokens): one page of tokens, filtered and totally ordered. */
export function listTokens(ctx: HandlerContext): RequestHandler {
  return (req, res) => {
    const query = listQuery(req.query as Record<string, unknown>);
    answerVia(ctx, req, res, `listTokens?${JSON.stringify(query)}`, () => listTokensAnswer(ctx, query));
  };
}
