import type { operations } from '../../../generated/token-api/schema.js';
import type { OperationHandler } from '../../common/http/app.js';
import { sendAnswer, parseAddresses, type HandlerContext } from '../http/context.js';
import { pricesAnswer } from '../http/answers.js';

/**
 * GET /prices?addresses= (operationId getPrices): one key per distinct requested address (lower case), in
 * request order; unknown tokens and tokens without prices in the window map to [].
 */
export function getPrices(ctx: HandlerContext): OperationHandler<operations['getPrices']> {
  return (req, res) => {
    const addresses = parseAddresses(req.query.addresses);
    sendAnswer(ctx, req, res, pricesAnswer(ctx, addresses));
  };
}
