import { rpcErrors, type RpcError } from '../common/errors.js';
import type { CallObject, RpcMethodName } from '../../generated/rpc/methods.js';
import { cachedRequest } from './cache/cached-request.js';
import { withLatest } from './cache/policy.js';
import { defineMethod, type RpcContext, type RpcMethod } from './context.js';
import { quantity, type Awaitable, type CallScope, type MethodParams, type MethodResult } from './types.js';
import type { RawJson } from './upstream/raw-json.js';

/**
 * Bounds of every call that makes the node execute code: eth_call, eth_estimateGas, debug_traceCall, svc_estimateGas,
 * vendor_simulateAssetChanges, eth_createAccessList, and eth_simulateV1 (capGas per given gas; its omitted gas is
 * filled as geth's simulator fills it, methods/eth_simulateV1.ts). eth_fillTransaction takes the time budget only: a
 * given gas is copied into its answer, never run.
 *   - gas: RPC_GAS_CAP (geth's RPCGasCap, 50,000,000). An omitted gas is set to the cap on what goes
 *     upstream (anvil has no cap of its own: an endless loop with gas 2^64-1 held it for good); more is
 *     refused with -32602 naming the cap.
 *   - time and concurrency: RPC_EVM_TIMEOUT_MS and RPC_EVM_MAX_CONCURRENT, applied by the pool's
 *     `compute` (upstream/pool.ts, upstream/gate.ts), which also records the time spent for rate units.
 */

/** -32602 naming the cap and the variable. `param`: the param's name and position, as other param errors say it. */
function gasAboveCap(param: string, gas: bigint, cap: bigint): RpcError {
  return rpcErrors.invalidParams(
    `${param}: gas ${gas} is above this endpoint's gas cap of ${cap} (RPC_GAS_CAP); send gas at most ${cap}, or leave gas out to get the cap`,
    { param: param.replace(/^param \d+ \((.*)\)$/, '$1'), cap: 'RPC_GAS_CAP', limit: quantity(cap) },
  );
}

/**
 * The call object with its gas bounded: an omitted gas becomes `cap` (so the node never chooses its own, unbounded,
 * allowance), a gas up to the cap is kept as sent, a gas above it is refused. Pure: the caller's object is not changed.
 * Exported for every method that runs a call (eth_simulateV1 bounds each given gas with it).
 */
export function capGas<T extends CallObject>(
  call: T,
  cap: bigint,
  param = 'param 0 (transaction)',
): T & { gas: string } {
  if (call.gas === undefined) return { ...call, gas: quantity(cap) };
  const gas = BigInt(call.gas);
  if (gas > cap) throw gasAboveCap(param, gas, cap);
  return call as T & { gas: string };
}

/** The methods whose first param is, by the spec, a call object the node runs (eth_call, debug_traceCall…). */
export type CallMethod = {
  [N in RpcMethodName]: MethodParams<N> extends readonly [CallObject, ...unknown[]] ? N : never;
}[RpcMethodName];

/**
 * A call that makes the node execute, answered as the node wrote it: the call object (param 0) has its gas bounded
 * (capGas), a block param left out is filled in with latest (cache/policy.ts withLatest), and the call goes through the
 * pool's compute gate. An answer that cannot change (at a block number or hash) comes from the answer cache, as for
 * other reads: a cached answer costs the node nothing. `arrived`: the call's arrival when it waited before
 * (debug_traceCall, for its client's trace slot).
 */
export function computeAnswer<N extends CallMethod>(
  ctx: RpcContext,
  name: N,
  params: MethodParams<N>,
  scope: CallScope,
  options: { arrived?: number } = {},
): Awaitable<RawJson<MethodResult<N>>> {
  const [call, ...rest]: readonly [CallObject, ...unknown[]] = params;
  const bounded = withLatest(name, [capGas(call, ctx.config.evm.gasCap), ...rest]);
  // A cached answer is answered now (types.ts, Awaitable); a refusal of capGas is thrown to the dispatcher.
  const raw = cachedRequest(ctx, name, bounded, scope.budget, (method, p) =>
    ctx.upstream.compute(method, p, { budget: scope.budget, arrived: options.arrived }),
  );
  return raw as Awaitable<RawJson<MethodResult<N>>>;
}

/** A method that is computeAnswer alone. */
export const computedMethod = <N extends CallMethod>(name: N): RpcMethod =>
  defineMethod(name, (ctx, params, call) => computeAnswer(ctx, name, params, call));

/** As computeAnswer, parsed: for handlers that look inside the node's answer (svc_estimateGas, asset changes). */
export async function computeResult<N extends CallMethod>(
  ctx: RpcContext,
  name: N,
  params: MethodParams<N>,
  scope: CallScope,
): Promise<unknown> {
  const [call, ...rest]: readonly [CallObject, ...unknown[]] = params;
  const bounded = [capGas(call, ctx.config.evm.gasCap), ...rest];
  return (await ctx.upstream.compute(name, bounded, { budget: scope.budget })).value;
}
