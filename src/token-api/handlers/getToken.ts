import type { RequestHandler } from 'express';
import { sendAnswer, pathAddress, type HandlerContext } from '../http/context.js';
import { tokenAnswer } from '../http/answers.js';

/** GET /tokens/{contractAddress} (operationId getToken). */
export function getToken(ctx: HandlerContext): RequestHandler {
  return (req, res) => {
    const address = pathAddress(req);
    sendAnswer(ctx, req, res, tokenAnswer(ctx, address));
  };
}
