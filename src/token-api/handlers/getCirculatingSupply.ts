import type { RequestHandler } from 'express';
import type { HandlerContext } from '../http/context.js';
import { sendSupply } from './supply.js';

/** GET /tokens/{contractAddress}/supply/circulating (operationId getCirculatingSupply). */
export function getCirculatingSupply(ctx: HandlerContext): RequestHandler {
  return (req, res) =>
    sendSupply(ctx, req, res, {
      raw: (s) => s.circulatingSupply,
      json: (s) => ({
        circulatingSupply: s.circulatingSupply,
        totalSupply: s.totalSupply,
        lastUpdated: s.lastUpdated.toISOString(),
        excludedWallets: s.excludedWallets.map((w) => ({ address: w.address, label: w.label, status: w.status, balance: w.balance })),
      }),
    });
}
