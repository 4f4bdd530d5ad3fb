import { Router } from '@open-rpc/server-js/build/router.js';
import { JSONRPCError } from '@open-rpc/server-js/build/error.js';
import type { Registry } from 'prom-client';
import { RpcError, rpcErrors } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { counter, histogram } from '../common/metrics.js';
import type { RpcContext, RpcMethod } from './context.js';
import { RpcCodes, toWireError, type WireError } from './errors.js';
import { invalidParamsFromRouter } from './param-errors.js';
import { checkParamRules } from './params/rules.js';
import { responseTooLarge, type ResponseBudget } from './response-budget.js';
import type { RpcSpec } from './spec.js';
import type { CallResult, CallScope, CallTarget } from './types.js';
import { RawJson } from './upstream/raw-json.js';

/** A param's compiled schema check (ajv's, the very function the Router's validator runs). */
type ParamCheck = { required: boolean; valid: ((value: unknown) => boolean) | undefined };

/** A served method, resolved once: what a valid call needs is a map lookup and the compiled checks. */
interface Served {
  names: string[];
  checks: ParamCheck[];
  run(params: unknown[], scope: CallScope): Promise<unknown>;
  /** Metric children of the ok outcome, bound once (prom-client hashes the labels on every labelled call). */
  ok: { inc(): void };
  duration: { observe(seconds: number): void };
}

/** The Router's validator keeps one ajv instance with a compiled schema per method param, under this id. */
interface RouterInternals {
  methodCallValidator: { ajvValidator: { getSchema(id: string): ((value: unknown) => boolean) | undefined } };
}

/**
 * Per-call validation and dispatch: the allow-list (only the spec's methods), positional params, and
 * then @open-rpc/server-js's Router, which validates each param against the spec's schema and calls the
 * handler. Every failure leaves here as a JSON-RPC error object; nothing invalid reaches an upstream.
 */
export class Dispatcher implements CallTarget {
  private readonly router: Router;
  private readonly paramNames = new Map<string, string[]>();
  private readonly served = new Map<string, Served>();
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
    const runs = new Map<string, Served['run']>();
    for (const m of methods) {
      if (!inSpec.has(m.name)) throw new Error(`handler ${m.name} matches no method of specs/rpc.openrpc.json`);
      if (mapping[m.name]) throw new Error(`handler ${m.name} is registered twice`);
      // The Router passes only params: `dispatch` appends the call's scope after the method's declared
      // params (which the Router's validation never looks past) and it is taken off again here.
      runs.set(m.name, async (params: unknown[], scope: CallScope) => {
        // Each param has passed its schema; the rules across members come next.
        checkParamRules(m.name, this.paramNames.get(m.name) ?? [], params);
        return m.handler(ctx, params, scope);
      });
      mapping[m.name] = async (...args: unknown[]) => {
        const { scope, given } = args[args.length - 1] as { scope: CallScope; given: number };
        try {
          return await runs.get(m.name)!(args.slice(0, given), scope);
        } catch (err) {
          const wire = this.handlerError(m.name, err);
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
    // The fast path of a valid call: the same compiled checks the Router runs (so exactly the same calls
    // pass), found by one map lookup instead of the Router's scan of the methods and ajv's lookup by id.
    const ajv = (this.router as unknown as RouterInternals).methodCallValidator.ajvValidator;
    for (const m of spec.dereferenced.methods) {
      const checks = m.params.map((p, i) => ({
        required: p.required === true,
        // The id @open-rpc/schema-utils-js files each param schema under (generateMethodParamId).
        valid: p.schema === undefined ? undefined : ajv.getSchema(`${m.name}/${i}`),
      }));
      if (checks.some((c, i) => c.valid === undefined && m.params[i]!.schema !== undefined)) throw new Error(`no compiled schema for a param of ${m.name}`);
      this.served.set(m.name, {
        names: m.params.map((p) => p.name),
        checks,
        run: runs.get(m.name)!,
        ok: this.metrics.calls.labels(m.name, 'ok'),
        duration: this.metrics.duration.labels(m.name),
      });
    }
  }

  /** A handler's failure as a wire error; a failure that is not an RpcError is a bug and is logged. */
  private handlerError(method: string, err: unknown): WireError {
    if (!(err instanceof RpcError)) this.logger.error({ err, method }, 'handler failed');
    return toWireError(err);
  }

  /** Whether the method is served (so metrics labels stay bounded: anything else is "other"). */
  isServed(method: string): boolean {
    return method === 'rpc.discover' || this.paramNames.has(method);
  }

  async call(method: string, params: unknown, scope: CallScope = {}): Promise<CallResult> {
    const started = performance.now();
    const served = this.served.get(method);
    let out: CallResult;
    try {
      out = served !== undefined && this.accepts(served, params) ? await this.run(method, served, (params ?? []) as unknown[], scope) : await this.dispatch(method, params, scope);
    } catch (err) {
      this.logger.error({ err, method }, 'dispatch failed');
      out = { error: toWireError(err) };
    }
    out = chargeAnswer(out, scope.budget);
    const seconds = (performance.now() - started) / 1000;
    if (served !== undefined && !('error' in out)) {
      served.ok.inc();
      served.duration.observe(seconds);
    } else {
      const label = this.isServed(method) ? method : 'other';
      this.metrics.calls.inc({ method: label, outcome: 'error' in out ? String(out.error.code) : 'ok' });
      this.metrics.duration.observe({ method: label }, seconds);
    }
    return out;
  }

  /**
   * Whether a call passes every check the Router would make (by position, not too many params, each
   * given or optional param valid by its compiled schema). Anything else takes the Router's path, which
   * words the error exactly as before.
   */
  private accepts(served: Served, params: unknown): boolean {
    if (params !== undefined && !Array.isArray(params)) return false;
    const list = (params ?? []) as unknown[];
    if (list.length > served.names.length) return false;
    for (let i = 0; i < served.checks.length; i++) {
      const c = served.checks[i]!;
      const value = list[i];
      if (value === undefined && !c.required) continue;
      if (c.valid !== undefined && !c.valid(value)) return false;
    }
    return true;
  }

  /** A valid call straight to its handler: errors become wire errors as the Router's path makes them. */
  private async run(method: string, served: Served, params: unknown[], scope: CallScope): Promise<CallResult> {
    try {
      const result = await served.run(params, scope);
      return { result: result === undefined ? null : result };
    } catch (err) {
      return { error: this.handlerError(method, err) };
    }
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

/** Counts one call's answer against the reply's budget: the answer, or the -32005 error replacing it. */
function chargeAnswer(out: CallResult, b: ResponseBudget | undefined): CallResult {
  if (!b || !('result' in out)) return out;
  // Answers are JSON of hex strings and numbers (ASCII), so string length is the byte count.
  const size = b.full ? 0 : out.result instanceof RawJson ? out.result.length : JSON.stringify(out.result ?? null).length;
  return b.fits(size) ? out : { error: toWireError(responseTooLarge(b.limit)) };
}
