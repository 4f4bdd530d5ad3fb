import type { TraceOptions } from '../../../generated/rpc/methods.js';
import type { Lifetime } from '../cache/answer-cache.js';
import { answerLifetime } from '../cache/policy.js';
import { cachedRequest } from '../cache/cached-request.js';
import type { RpcContext } from '../context.js';
import { quotaExceeded } from '../ratelimit.js';
import type { Awaitable, CallScope } from '../types.js';
import type { RawJson } from '../upstream/raw-json.js';

/**
 * The gate of every trace (debug_traceTransaction, debug_traceBlockByHash/ByNumber, debug_traceCall,
 * trace_transaction). A trace re-executes a transaction or a whole block: one of a 27M-gas transaction keeps
 * the node busy for as long as the transaction took to mine, so traces are bounded like eth_call
 * (evm-bounds.ts), not like reads:
 *   - per client: at most RPC_TRACE_MAX_PER_CLIENT in flight in this process; more wait for one of them;
 *   - on the node: the pool's compute gate (RPC_EVM_MAX_CONCURRENT slots shared with eth_call); the call is
 *     answered within RPC_EVM_TIMEOUT_MS of its arrival, both waits included, or -32005; a tracer `timeout`
 *     above that budget is lowered to it;
 *   - cost: the time the node spent is added to the reply's charge (RPC_RATE_LIMIT_MS_PER_UNIT);
 *   - cache: a trace of a block that cannot change any more (by hash, or at or below the finalized block;
 *     of a transaction mined in such a block) is kept in the answer cache and costs the node nothing again.
 */

const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 1e-3, µs: 1e-3, ns: 1e-6 };

/** A Go duration as the spec admits it (`1.5s`, `300ms`, `1m30s`) in milliseconds. */
export function durationMs(text: string): number {
  let ms = 0;
  for (const m of text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms;
}

/**
 * The tracer options with a `timeout` above RPC_EVM_TIMEOUT_MS lowered to it: a node that honours the option
 * (geth) stops where the endpoint would abandon the call anyway. A shorter one, or none, goes as sent
 * (anvil 1.7.1 accepts the option and ignores it: there the compute gate is the bound).
 */
export function boundTracerTimeout(options: TraceOptions, limitMs: number): TraceOptions {
  if (options.timeout === undefined || durationMs(options.timeout) <= limitMs) return options;
  return { ...options, timeout: `${limitMs}ms` };
}

/** -32005 naming RPC_TRACE_MAX_PER_CLIENT. */
const tooManyTraces = (ctx: RpcContext) =>
  quotaExceeded('traces', ctx.config.traceMaxPerClient, 'RPC_TRACE_MAX_PER_CLIENT', ctx.config.evm.timeoutMs);

/**
 * `run` within one of the client's trace slots, waited for at most RPC_EVM_TIMEOUT_MS. `run` gets the call's
 * arrival: the node's execution slots and the time on the node count from it too (one budget, waits included).
 */
export async function inTraceSlot<T>(
  ctx: RpcContext,
  scope: CallScope,
  run: (arrived: number) => Awaitable<T>,
): Promise<T> {
  const arrived = performance.now();
  const release = await ctx.quotas.traces.take(scope.client);
  if (!release) throw tooManyTraces(ctx);
  try {
    return await run(arrived);
  } finally {
    release();
  }
}

/**
 * How long a trace of a transaction stays true: as long as the block it was mined in (its lookup is itself
 * cached once final, policy.ts 'mined'); undefined for an unknown or pending transaction, or with no cache.
 */
export async function txTraceLifetime(ctx: RpcContext, hash: string): Promise<Lifetime | undefined> {
  if (!ctx.cache.enabled) return undefined;
  const tx = await cachedRequest(ctx, 'eth_getTransactionByHash', [hash], undefined);
  return answerLifetime('byAnswer', tx, ctx.upstream.tracker, ctx.upstream.headIsLive);
}

const keyOf = (ctx: RpcContext, method: string, params: readonly unknown[], lifetime: Lifetime | undefined) =>
  lifetime && ctx.cache.enabled ? `${method}${JSON.stringify(params)}` : undefined;

/**
 * The trace from the node through the compute gate (time budget from `arrived`, time charged), kept when `lifetime`
 * allows.
 */
async function fetchTrace(
  ctx: RpcContext,
  method: string,
  params: readonly unknown[],
  scope: CallScope,
  lifetime: Lifetime | undefined,
  arrived: number,
): Promise<RawJson> {
  const { cache, upstream } = ctx;
  const key = keyOf(ctx, method, params, lifetime);
  const version = upstream.tracker.version;
  const raw = await upstream.compute(method, params, { budget: scope.budget, arrived });
  if (key !== undefined && (lifetime === 'final' || (upstream.headIsLive && upstream.tracker.version === version)))
    cache.set(key, raw, lifetime!);
  return raw;
}

/**
 * The node's trace as it wrote it, from the answer cache when `lifetime` allows, else fetchTrace. Call it within
 * inTraceSlot.
 */
export function tracedRaw(
  ctx: RpcContext,
  method: string,
  params: readonly unknown[],
  scope: CallScope,
  lifetime: Lifetime | undefined,
  arrived: number,
): Awaitable<RawJson> {
  const key = keyOf(ctx, method, params, lifetime);
  return (
    (key === undefined ? undefined : ctx.cache.get(key)) ?? fetchTrace(ctx, method, params, scope, lifetime, arrived)
  );
}

/** A cached trace is answered without taking a slot; a miss takes one of the client's slots, then asks the node. */
export function gatedTrace(
  ctx: RpcContext,
  method: string,
  params: readonly unknown[],
  scope: CallScope,
  lifetime: Lifetime | undefined,
): Awaitable<RawJson> {
  const key = keyOf(ctx, method, params, lifetime);
  return (
    (key === undefined ? undefined : ctx.cache.get(key)) ??
    inTraceSlot(ctx, scope, (arrived) => fetchTrace(ctx, method, params, scope, lifetime, arrived))
  );
}
