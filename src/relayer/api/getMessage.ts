import type { operations } from '../../../generated/relayer-api/schema.js';
import type { OperationHandler } from '../../common/http/app.js';
import { findOne, toRecord, type ApiContext } from './context.js';

/** GET /messages/{messageHash}: one record; 409 when the hash exists in both directions and none is given. */
export const getMessage =
  (ctx: ApiContext): OperationHandler<operations['getMessage']> =>
  async (req, res) => {
    const row = await findOne(ctx, req.params.messageHash, req.query.direction);
    const history = await ctx.repo.history([row.id]);
    res.json(toRecord(row, history.get(row.id) ?? []));
  };
