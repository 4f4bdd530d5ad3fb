import type { operations } from '../../../generated/relayer-api/schema.js';
import type { OperationHandler } from '../../common/http/app.js';
import { adminActionHandler, type ApiContext } from './context.js';

/** POST /messages/{messageHash}/retry: back into claiming with fresh counters (src/relayer/db/admin.ts). */
export const retryMessage = (ctx: ApiContext): OperationHandler<operations['retryMessage']> =>
  adminActionHandler(ctx, 'retry');
