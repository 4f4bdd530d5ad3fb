import type { RequestHandler } from 'express';
import type { ApiContext } from './context.js';

/** GET /metrics: the process registry in the Prometheus text format. */
export const getMetrics = (ctx: ApiContext): RequestHandler => async (_req, res) => {
  const body = await ctx.registry.metrics();
  res.setHeader('content-type', ctx.registry.contentType);
  res.send(body);
};
