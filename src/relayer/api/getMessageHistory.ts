import type { operations } from '../../../generated/relayer-api/schema.js';
import type { OperationHandler } from '../../common/http/app.js';
import { findOne, toHistoryEntry, type ApiContext } from './context.js';

/** GET /messages/{messageHash}/history: every status change, oldest first, with its claim transaction and actor. */
export const getMessageHistory =
  (ctx: ApiContext): OperationHandler<operations['getMessageHistory']> =>
  async (req, res) => {
    const row = await findOne(ctx, req.params.messageHash, req.query.direction);
    const history = (await ctx.repo.history([row.id])).get(row.id) ?? [];
    res.json({
      messageHash: row.message_hash,
      direction: row.direction,
      status: row.status,
      history: history.map(toHistoryEntry),
    });
  };
