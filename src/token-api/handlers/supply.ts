import type { Request, Response } from 'express';
import { HttpError, notFound } from '../../common/errors.js';
import type { HandlerContext } from '../http/context.js';
import { jsonRepresentation, send, textRepresentation, type Representation } from '../http/representation.js';
import type { SupplySnapshot } from '../supply/job.js';
import { pathAddress } from '../http/context.js';
import { negotiateSupplyFormat } from '../http/negotiate.js';

export type SupplyKind = 'total' | 'circulating';

const PICK: Record<SupplyKind, { raw: (s: SupplySnapshot) => string; json: (s: SupplySnapshot) => unknown }> = {
  total: {
    raw: (s) => s.totalSupply,
    json: (s) => ({ totalSupply: s.totalSupply, lastUpdated: s.lastUpdated.toISOString() }),
  },
  circulating: {
    raw: (s) => s.circulatingSupply,
    json: (s) => ({
      circulatingSupply: s.circulatingSupply,
      totalSupply: s.totalSupply,
      lastUpdated: s.lastUpdated.toISOString(),
      excludedWallets: s.excludedWallets.map((w) => ({
        address: w.address,
        label: w.label,
        status: w.status,
        balance: w.balance,
      })),
    }),
  },
};

const reps = new WeakMap<SupplySnapshot, Map<string, Representation>>();

/**
 * The current snapshot's representation, made once per snapshot (it changes on every refresh); undefined before the
 * first.
 */
export function supplyRepresentation(
  ctx: HandlerContext,
  kind: SupplyKind,
  format: 'raw' | 'json',
): Representation | undefined {
  const snapshot = ctx.supply.snapshot;
  if (snapshot === undefined) return undefined;
  let memo = reps.get(snapshot);
  if (!memo) reps.set(snapshot, (memo = new Map()));
  const key = `${kind}:${format}`;
  let rep = memo.get(key);
  if (!rep) {
    const pick = PICK[kind];
    rep =
      format === 'json'
        ? jsonRepresentation(pick.json(snapshot), ctx.supply.maxAgeSeconds)
        : textRepresentation(pick.raw(snapshot), ctx.supply.maxAgeSeconds);
    memo.set(key, rep);
  }
  return rep;
}

/**
 * Shared by getTotalSupply and getCirculatingSupply: only the native token has supply figures (404
 * otherwise), and none exist before the supply job's first run (503 with Retry-After).
 */
export function sendSupply(ctx: HandlerContext, req: Request, res: Response, kind: SupplyKind): void {
  const address = pathAddress(req);
  if (ctx.nativeToken === undefined || address !== ctx.nativeToken) {
    throw notFound(
      ctx.nativeToken === undefined
        ? 'Supply data is not available: no native token is configured'
        : `Supply data is only available for the native token ${ctx.nativeToken}`,
    );
  }
  // `format` wins; without it the Accept header decides (negotiate.ts).
  const format = (req.query as Record<string, unknown>).format;
  const rep = supplyRepresentation(
    ctx,
    kind,
    format === 'json' || format === 'raw' ? format : negotiateSupplyFormat(req.headers.accept),
  );
  if (rep === undefined) {
    res.setHeader('Retry-After', String(ctx.supply.retryAfterSeconds));
    throw new HttpError(503, 'Service Unavailable', 'Supply data is not available yet');
  }
  res.setHeader('Vary', 'Accept');
  send(req, res, rep, { viaJson: ctx.validateResponses });
}
