import type { Request, Response } from 'express';
import { HttpError, notFound } from '../../common/errors.js';
import type { HandlerContext } from '../http/context.js';
import { jsonRepresentation, send, textRepresentation } from '../http/representation.js';
import type { SupplySnapshot } from '../supply/job.js';
import { pathAddress, rememberUrl } from '../http/context.js';

/**
 * Shared by getTotalSupply and getCirculatingSupply: only the native token has supply figures (404
 * otherwise), and none exist before the supply job's first run (503 with Retry-After).
 */
export function sendSupply(
  ctx: HandlerContext,
  req: Request,
  res: Response,
  pick: { raw: (s: SupplySnapshot) => string; json: (s: SupplySnapshot) => unknown },
): void {
  const address = pathAddress(req);
  if (ctx.nativeToken === undefined || address !== ctx.nativeToken) {
    throw notFound(
      ctx.nativeToken === undefined
        ? 'Supply data is not available: no native token is configured'
        : `Supply data is only available for the native token ${ctx.nativeToken}`,
    );
  }
  const snapshot = ctx.supply.snapshot;
  if (snapshot === undefined) {
    res.setHeader('Retry-After', String(ctx.supply.retryAfterSeconds));
    throw new HttpError(503, 'Service Unavailable', 'Supply data is not available yet');
  }
  const format = (req.query as Record<string, unknown>).format === 'json' ? 'json' : 'raw';
  // The snapshot object changes on every refresh, so caching per snapshot needs no TTL.
  const memo = reps.get(snapshot) ?? new Map<string, ReturnType<typeof textRepresentation>>();
  reps.set(snapshot, memo);
  const key = `${req.route?.path}:${format}`;
  let rep = memo.get(key);
  if (!rep) {
    rep = format === 'json' ? jsonRepresentation(pick.json(snapshot), ctx.supply.maxAgeSeconds) : textRepresentation(pick.raw(snapshot), ctx.supply.maxAgeSeconds);
    memo.set(key, rep);
  }
  rememberUrl(ctx, req, rep);
  send(req, res, rep, { viaJson: ctx.validateResponses });
}

const reps = new WeakMap<SupplySnapshot, Map<string, ReturnType<typeof textRepresentation>>>();
