import type { operations } from '../../../generated/token-api/schema.js';
import type { OperationHandler } from '../../common/http/app.js';
import { sendAnswer, parseAddresses, type HandlerContext } from '../http/context.js';
import { listTokensAnswer } from '../http/answers.js';
import type { ListQuery } from '../repository.js';

/** The query of listTokens as the spec types it (the validator has checked and coerced it). */
export type ListTokensQuery = NonNullable<operations['listTokens']['parameters']['query']>;

/** The validated query of listTokens with its defaults applied (addresses sorted: order does not matter). */
export function listQuery(q: ListTokensQuery): ListQuery {
  return {
    page: Number(q.page ?? 1),
    limit: Number(q.limit ?? 50),
    // The validator coerces to a boolean; a string survives only if coercion is ever turned off.
    isSecure: q.isSecure === undefined ? undefined : String(q.isSecure) === 'true',
    addresses: q.addresses === undefined ? undefined : parseAddresses(q.addresses).sort(),
    order: q.order ?? 'fdv',
    sort: q.sort === 'asc' ? 'asc' : 'desc',
  };
}

/** GET /tokens (operationId listTokens): one page of tokens, filtered and totally ordered. */
export function listTokens(ctx: HandlerContext): OperationHandler<operations['listTokens']> {
  return (req, res) => {
    const query = listQuery(req.query);
    sendAnswer(ctx, req, res, listTokensAnswer(ctx, query));
  };
}
