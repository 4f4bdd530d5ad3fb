import type { RequestHandler } from 'express';
import type { Direction } from '../config.js';
import type { MessageStatus } from '../db/migrations.js';
import { toRecord, type ApiContext } from './context.js';

/** GET /messages: newest first (createdAt desc, then hash and direction), filters ANDed. */
export const listMessages = (ctx: ApiContext): RequestHandler => async (req, res) => {
  const page = Number(req.query.page ?? 1);
  const limit = Number(req.query.limit ?? 50);
  const filter = { status: req.query.status as MessageStatus | undefined, direction: req.query.direction as Direction | undefined };
  const { rows, total } = await ctx.repo.list(filter, page, limit);
  const history = await ctx.repo.history(rows.map((r) => r.id));
  res.json({
    data: rows.map((r) => toRecord(r, history.get(r.id) ?? [])),
    meta: { page, limit, totalItemsCount: total, pagesCount: Math.ceil(total / limit) },
  });
};
