import type { RequestHandler } from 'express';
import { sendAnswer, pathAddress, type HandlerContext } from '../http/context.js';
import { tokenPricesAnswer } from '../http/answers.js';

/** GET /prices/{contractAddress} (operationId getTokenPrices): the hourly series of the last 24 h, oldest first. */
export function getTokenPrices(ctx: HandlerContext): RequestHandler {
  return (req, res) => {
    const address = pathAddress(req);
    sendAnswer(ctx, req, res, tokenPricesAnswer(ctx, address));
  };
}
