import type { RequestHandler } from 'express';

/** GET /health/live: the process answers; no dependency is checked. */
export const getLiveness = (): RequestHandler => (_req, res) => {
  res.json({ status: 'ok' });
};
