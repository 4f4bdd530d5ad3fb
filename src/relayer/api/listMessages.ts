import type { operations } from '../../../generated/relayer-api/schema.js';
import type { OperationHandler } from '../../common/http/app.js';
import { toRecord, type ApiContext } from './context.js';

/** GET /messages: newest first (createdAt desc, then hash and direction), filters ANDed. */
export const listMessages =
  (ctx: ApiContext): OperationHandler<operations['listMessages']> =>
  async (req, res) => {
    const page = req.query.page ?? 1;
    const limit = req.query.limit ?? 50;
    const filter = { status: req.query.status, direction: req.query.direction };
    const { rows, total } = await ctx.repo.list(filter, page, limit);
    const history = await ctx.repo.history(rows.map((r) => r.id));
    res.json({
      data: rows.map((r) => toRecord(r, history.get(r.id) ?? [])),
      meta: { page, limit, totalItemsCount: total, pagesCount: Math.ceil(total / limit) },
    });
  };
