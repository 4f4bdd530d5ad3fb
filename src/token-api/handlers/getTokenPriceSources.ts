import type { RequestHandler } from 'express';
import { answerVia, pathAddress, type HandlerContext } from '../http/context.js';
import { priceSourcesAnswer } from '../http/answers.js';

/** GET /tokens/{contractAddress}/price-sources (operationId getTokenPriceSources): what made the current price. */
export function getTokenPriceSources(ctx: HandlerContext): RequestHandler {
  return (req, res) => {
    const address = pathAddress(req);
    // The minute is part of the key: the answer's freshness factor moves with it.
    answerVia(ctx, req, res, `getTokenPriceSources?${address}@${Math.floor(ctx.now() / 60_000)}`, () => priceSourcesAnswer(ctx, address));
  };
}
