import type { RequestHandler } from 'express';
import type { HandlerContext } from '../http/context.js';
import { sendSupply } from './supply.js';

/** GET /tokens/{contractAddress}/supply/circulating (operationId getCirculatingSupply). */
export function getCirculatingSupply(ctx: HandlerContext): RequestHandler {
  return (req, res) => sendSupply(ctx, req, res, 'circulating');
}
