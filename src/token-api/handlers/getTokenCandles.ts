import type { RequestHandler } from 'express';
import { sendAnswer, pathAddress, type HandlerContext } from '../http/context.js';
import { candlesAnswer } from '../http/answers.js';

/**
 * GET /prices/{contractAddress}/candles (operationId getTokenCandles): hourly candles of the last 24 h, oldest first.
 */
export function getTokenCandles(ctx: HandlerContext): RequestHandler {
  return (req, res) => {
    const address = pathAddress(req);
    sendAnswer(ctx, req, res, candlesAnswer(ctx, address));
  };
}
