import type { RequestHandler } from 'express';
import type { HandlerContext } from '../http/context.js';
import { sendSupply } from './supply.js';

/** GET /tokens/{contractAddress}/supply/total (operationId getTotalSupply). */
export function getTotalSupply(ctx: HandlerContext): RequestHandler {
  return (req, res) => sendSupply(ctx, req, res, 'total');
}
