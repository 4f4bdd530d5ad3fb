import type { operations } from '../../../generated/relayer-api/schema.js';
import type { OperationHandler } from '../../common/http/app.js';
import { HttpError, notFound } from '../../common/errors.js';
import { toRecord, type ApiContext } from './context.js';

/** GET /messages/{messageHash}: one record; 409 when the hash exists in both directions and none is given. */
export const getMessage = (ctx: ApiContext): OperationHandler<operations['getMessage']> => async (req, res) => {
  const hash = req.params.messageHash.toLowerCase();
  const direction = req.query.direction;
  const rows = await ctx.repo.findByHash(hash, direction);
  if (rows.length === 0) throw notFound(direction ? `No ${direction} message with hash ${hash}` : `No message with hash ${hash}`);
  if (rows.length > 1) {
    throw new HttpError(409, 'Conflict', `Message ${hash} exists in both directions; add ?direction=L1_TO_L2 or ?direction=L2_TO_L1`);
  }
  const row = rows[0]!;
  const history = await ctx.repo.history([row.id]);
  res.json(toRecord(row, history.get(row.id) ?? []));
};
