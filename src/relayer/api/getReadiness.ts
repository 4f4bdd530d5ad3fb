import type { RequestHandler } from 'express';
import type { ApiContext } from './context.js';

/** GET /health/ready: 200 when every check passes, else 503 with the same Readiness body. */
export const getReadiness = (ctx: ApiContext): RequestHandler => async (_req, res) => {
  const checks = await ctx.readiness();
  const ok = checks.every((c) => c.ok);
  res.status(ok ? 200 : 503).json({ status: ok ? 'ok' : 'unavailable', checks });
};
