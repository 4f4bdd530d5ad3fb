import type { Logger } from '../common/log.js';
import type { RpcConfig } from './config.js';
import type { UpstreamPool } from './upstream/pool.js';
import type { FilterStore } from './filters/store.js';
import type { ProofBackend } from './proof.js';
import type { BundlerClient } from './upstream/bundler-client.js';
import type { AnswerCache } from './cache/answer-cache.js';
import type { ClientSlots } from './ratelimit.js';
import { cachedRequest } from './cache/cached-request.js';
import { withLatest } from './cache/policy.js';
import type { RawJson } from './upstream/raw-json.js';
import type { Awaitable, CallScope, MethodAnswer, MethodParams, MethodResult } from './types.js';
import type { RpcMethodName } from '../../generated/rpc/methods.js';

/*
 * The handlers' contract: the layer above the upstream pool, the cache and the filter store, below the
 * dispatcher. Method files (methods/) and their helpers import this; nothing below them does.
 */

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
  /**
   * Per-client quotas of calls in flight: traces (RPC_TRACE_MAX_PER_CLIENT), wide eth_getLogs
   * (RPC_LOGS_WIDE_MAX_PER_CLIENT).
   */
  quotas: { traces: ClientSlots; wideLogs: ClientSlots };
}

/** A handler typed by the spec: a result shape the spec does not allow fails `npm run typecheck`. */
export type MethodHandler<N extends RpcMethodName> = (
  ctx: RpcContext,
  params: MethodParams<N>,
  call: CallScope,
) => Awaitable<MethodAnswer<N>>;

/** A served method as the dispatcher holds it: one list of every method, so the types are erased here. */
export interface RpcMethod {
  /** Exactly the method name in specs/rpc.openrpc.json. */
  name: RpcMethodName;
  /** Receives the positional params after the spec validated them. */
  handler(ctx: RpcContext, params: readonly unknown[], call: CallScope): Awaitable<unknown>;
}

/**
 * A method typed by the spec. The one place the types are erased: the dispatcher only calls a handler with params the
 * spec (the source of MethodParams) has already validated.
 */
export const defineMethod = <N extends RpcMethodName>(name: N, handler: MethodHandler<N>): RpcMethod => ({
  name,
  handler: handler as RpcMethod['handler'],
});

/**
 * The node's answer to a standard read, typed as the spec's result: a pass-through answer is not parsed (a RawJson), so
 * the node is trusted to answer the standard method's shape. A block param left out is filled in with latest
 * (cache/policy.ts withLatest). Reads come from the answer cache when they cannot have changed (unless `uncached`).
 */
export function upstreamAnswer<N extends RpcMethodName>(
  ctx: RpcContext,
  name: N,
  params: readonly unknown[],
  call: CallScope,
  options: { uncached?: boolean } = {},
): Awaitable<RawJson<MethodResult<N>>> {
  const filled = withLatest(name, params);
  // A cache hit is answered now, without a promise (types.ts, Awaitable).
  const raw = options.uncached
    ? ctx.upstream.requestRaw(name, filled, { budget: call.budget })
    : cachedRequest(ctx, name, filled, call.budget);
  return raw as Awaitable<RawJson<MethodResult<N>>>;
}

/**
 * A standard method asked of the upstream node by a handler that looks inside the answer: params and result typed by
 * the spec (the node is trusted to answer a standard method's shape, as for pass-through).
 */
export async function upstreamCall<N extends RpcMethodName>(
  ctx: RpcContext,
  name: N,
  params: MethodParams<N>,
): Promise<MethodResult<N>> {
  return (await ctx.upstream.request(name, params)) as MethodResult<N>;
}

/**
 * A standard method the upstream node answers as it is (params already validated against the spec); see upstreamAnswer.
 */
export const passThrough = <N extends RpcMethodName>(name: N): RpcMethod =>
  defineMethod(name, (ctx, params, call) => upstreamAnswer(ctx, name, params, call));
