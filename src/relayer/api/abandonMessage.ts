import type { operations } from '../../../generated/relayer-api/schema.js';
import type { OperationHandler } from '../../common/http/app.js';
import { adminActionHandler, type ApiContext } from './context.js';

/** POST /messages/{messageHash}/abandon: to ABANDONED, never claimed (src/relayer/db/admin.ts). */
export const abandonMessage = (ctx: ApiContext): OperationHandler<operations['abandonMessage']> =>
  adminActionHandler(ctx, 'abandon');
