import type { RequestHandler } from 'express';
import { sendAnswer, pathAddress, type HandlerContext } from '../http/context.js';
import { priceSourcesAnswer } from '../http/answers.js';

/** GET /tokens/{contractAddress}/price-sources (operationId getTokenPriceSources): what made the current price. */
export function getTokenPriceSources(ctx: HandlerContext): RequestHandler {
  return (req, res) => {
    const address = pathAddress(req);
    sendAnswer(ctx, req, res, priceSourcesAnswer(ctx, address));
  };
}
