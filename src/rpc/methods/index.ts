import type { RpcMethodName } from '../../../generated/rpc/methods.js';
import type { RpcMethod } from '../context.js';
import * as handlers from './handlers.js';

/**
 * Every served method: the handlers of handlers.ts, one per method of specs/rpc.openrpc.json (a method without
 * one fails `npm run typecheck` here; the dispatcher refuses a handler the spec lacks).
 */
const BY_NAME: Record<RpcMethodName, RpcMethod> = handlers;
export const METHODS: readonly RpcMethod[] = Object.values(BY_NAME);
