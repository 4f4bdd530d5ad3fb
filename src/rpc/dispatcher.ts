import { Router } from '@open-rpc/server-js/build/router.js';
import { JSONRPCError } from '@open-rpc/server-js/build/error.js';
import type { Registry } from 'prom-client';
import { RpcError, rpcErrors } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { counter, histogram } from '../common/metrics.js';
import type { CallScope, RpcContext, RpcMethod } from './context.js';
import { RpcCodes, toWireError, type WireError } from './errors.js';
import { invalidParamsFromRouter } from './param-errors.js';
import { checkParamRules } from './params/rules.js';
import { chargeAnswer } from './response-budget.js';
import type { RpcSpec } from './spec.js';

export type CallResult = { result: unknown } | { error: WireError };

/**
 * Per-call validation and dispatch: the allow-list (only the spec's methods), positional params, and
 * then @open-rpc/server-js's Router, which validates each param against the spec's schema and calls the
 * handler. Every failure leaves here as a JSON-RPC error object; nothing invalid reaches an upstream.
 */
export class Dispatcher {
  private readonly router: Router;
  private readonly paramNames = new Map<string, string[]>();
  private readonly metrics;

  constructor(
    private readonly spec: RpcSpec,
    methods: readonly RpcMethod[],
    ctx: RpcContext,
    metrics: Registry,
    private readonly logger: Logger,
  ) {
    const inSpec = new Set(spec.dereferenced.methods.map((m) => m.name));
    const mapping: Record<string, (...params: unknown[]) => Promise<unknown>> = {};
    for (const m of methods) {
      if (!inSpec.has(m.name)) throw new Error(`handler ${m.name} matches no method of specs/rpc.openrpc.json`);
      if (mapping[m.name]) throw new Error(`handler ${m.name} is registered twice`);
      // The Router passes only params: `dispatch` appends the call's scope after the method's declared
      // params (which the Router's validation never looks past) and it is taken off again here.
      mapping[m.name] = async (...args: unknown[]) => {
        const { scope, given } = args[args.length - 1] as { scope: CallScope; given: number };
        try {
          // The Router has validated each param against its schema; the rules across members come next.
          checkParamRules(m.name, this.paramNames.get(m.name) ?? [], args.slice(0, given));
          return await m.handler(ctx, args.slice(0, given), scope);
        } catch (err) {
          if (!(err instanceof RpcError)) this.logger.error({ err, method: m.name }, 'handler failed');
          const wire = toWireError(err);
          throw new JSONRPCError(wire.message, wire.code, wire.data);
        }
      };
    }
    const missing = [...inSpec].filter((name) => !mapping[name]);
    if (missing.length > 0) throw new Error(`no handler for ${missing.join(', ')} (specs/rpc.openrpc.json)`);
    for (const m of spec.dereferenced.methods) this.paramNames.set(m.name, m.params.map((p) => p.name));
    this.router = new Router(spec.dereferenced as never, mapping as never);
    this.metrics = {
      calls: counter(metrics, 'l2stack_rpc_calls_total', 'JSON-RPC calls by method and outcome (ok or the error code)', ['method', 'outcome']),
      duration: histogram(metrics, 'l2stack_rpc_call_duration_seconds', 'Time to answer one JSON-RPC call', ['method'], [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
      ]),
    };
  }

  /** Whether the method is served (so metrics labels stay bounded: anything else is "other"). */
  isServed(method: string): boolean {
    return method === 'rpc.discover' || this.paramNames.has(method);
  }

  async call(method: string, params: unknown, scope: CallScope = {}): Promise<CallResult> {
    const started = performance.now();
    const label = this.isServed(method) ? method : 'other';
    let out: CallResult;
    try {
      out = await this.dispatch(method, params, scope);
    } catch (err) {
      this.logger.error({ err, method }, 'dispatch failed');
      out = { error: toWireError(err) };
    }
    out = chargeAnswer(out, scope.budget);
    this.metrics.calls.inc({ method: label, outcome: 'error' in out ? String(out.error.code) : 'ok' });
    this.metrics.duration.observe({ method: label }, (performance.now() - started) / 1000);
    return out;
  }

  private async dispatch(method: string, params: unknown, scope: CallScope): Promise<CallResult> {
    if (method === 'rpc.discover') {
      if (params !== undefined && !(Array.isArray(params) && params.length === 0)) {
        return { error: toWireError(rpcErrors.invalidParams('rpc.discover takes no params')) };
      }
      return { result: this.spec.document };
    }
    const names = this.paramNames.get(method);
    if (!names) return { error: toWireError(rpcErrors.methodNotFound(method)) };
    if (params !== undefined && !Array.isArray(params)) {
      return { error: { code: RpcCodes.InvalidParams, message: `invalid params: ${method} takes its params by position (a JSON array), got an object` } };
    }
    const list = (params ?? []) as unknown[];
    if (list.length > names.length) {
      const takes = names.length === 0 ? 'no params' : `at most ${names.length} (${names.join(', ')})`;
      return { error: { code: RpcCodes.InvalidParams, message: `invalid params: ${method} takes ${takes}, got ${list.length}` } };
    }
    // Missing optional params stay undefined (the Router skips them), so the scope lands past the declared ones.
    const withScope = [...list, ...new Array<undefined>(names.length - list.length), { scope, given: list.length }];
    const out = (await this.router.call(method, withScope)) as { result?: unknown; error?: WireError };
    if (out.error) {
      if (out.error.code === RpcCodes.InvalidParams && Array.isArray(out.error.data)) return { error: toWireError(invalidParamsFromRouter(names, out.error.data)) };
      return { error: out.error.data === undefined ? { code: out.error.code, message: out.error.message } : out.error };
    }
    return { result: out.result === undefined ? null : out.result };
  }
}
