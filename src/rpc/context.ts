import type { Logger } from '../common/log.js';
import type { RpcConfig } from './config.js';
import type { UpstreamPool } from './upstream/pool.js';
import type { FilterStore } from './filters/store.js';
import type { ProofBackend } from './proof.js';
import type { BundlerClient } from './bundler.js';
import type { ResponseBudget } from './response-budget.js';
import type { SocketSubscriptions } from './ws/calls.js';
import type { AnswerCache } from './cache/answer-cache.js';
import { cachedRequest } from './cache/cached-request.js';

/** What every method handler receives: the endpoint's shared services (built once at start). */
export interface RpcContext {
  config: RpcConfig;
  logger: Logger;
  upstream: UpstreamPool;
  filters: FilterStore;
  bundler: BundlerClient | undefined;
  proofBackend: ProofBackend | undefined;
  /** Answers that cannot have changed (RPC_CACHE_BYTES; cache/policy.ts decides what and how long). */
  cache: AnswerCache;
}

/** What one call carries besides its params: who sent it and the byte budget of its reply. */
export interface CallScope {
  /** The rate limiter's client identity (socket address or trusted X-Forwarded-For hop). */
  client?: string;
  budget?: ResponseBudget;
  /** The WebSocket the call came over (eth_subscribe binds subscriptions to it); absent over HTTP. */
  socket?: SocketSubscriptions;
}

export interface RpcMethod {
  /** Exactly the method name in specs/rpc.openrpc.json. */
  name: string;
  /** Receives the positional params after the spec validated them. */
  handler(ctx: RpcContext, params: unknown[], call: CallScope): Promise<unknown>;
}

export const defineMethod = (name: string, handler: RpcMethod['handler']): RpcMethod => ({ name, handler });

/**
 * A standard method the upstream node answers as it is (params already validated against the spec): the
 * answer goes back as the node wrote it (a RawJson, never parsed), from the answer cache when it cannot
 * have changed. `blockAt`: position of an optional block param the spec defaults to latest; it is filled
 * in, because some nodes (anvil) insist on it. Writes are never cached and never resent (pool.ts).
 */
export const passThrough = (name: string, options: { write?: boolean; blockAt?: number } = {}): RpcMethod =>
  defineMethod(name, (ctx, params, call) => {
    const filled = options.blockAt !== undefined && params.length === options.blockAt ? [...params, 'latest'] : params;
    if (options.write) return ctx.upstream.requestRaw(name, filled, { write: true, budget: call.budget });
    return cachedRequest(ctx, name, filled, call.budget);
  });
