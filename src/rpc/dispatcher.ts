import type { Registry } from 'prom-client';
import { RpcError, rpcErrors } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { slotCounter, slotHistogram } from '../common/metric-slots.js';
import type { RpcContext, RpcMethod } from './context.js';
import { RpcCodes, toWireError, type WireError } from './errors.js';
import { compileParamChecks, type ParamChecks } from './param-checks.js';
import { checkParamRules } from './params/rules.js';
import { responseTooLarge, type ResponseBudget } from './response-budget.js';
import type { RpcSpec } from './spec.js';
import type { Awaitable, CallResult, CallScope, CallTarget } from './types.js';
import { RawJson } from './upstream/raw-json.js';

/** A served method, resolved once at start: its handler, its compiled param checks, its metric children. */
interface Served {
  handler: RpcMethod['handler'];
  params: ParamChecks;
  /** Bound once: a slot each (metric-slots.ts), so a call's metrics are two additions. */
  ok: { inc(): void };
  duration: { observe(seconds: number): void };
}

/**
 * Per-call validation and dispatch: one map from method name to its handler and its param checks, compiled
 * from specs/rpc.openrpc.json at start. Only the spec's methods are served, params go by position, each is
 * checked against its schema and then by the rules across members (params/rules.ts), and only then does the
 * handler run. Every failure leaves here as a JSON-RPC error object; nothing invalid reaches an upstream.
 */
export class Dispatcher implements CallTarget {
  private readonly served = new Map<string, Served>();
  private readonly metrics;

  constructor(
    private readonly spec: RpcSpec,
    methods: readonly RpcMethod[],
    private readonly ctx: RpcContext,
    metrics: Registry,
    private readonly logger: Logger,
  ) {
    this.metrics = {
      calls: slotCounter(
        metrics,
        'l2stack_rpc_calls_total',
        'JSON-RPC calls by method and outcome (ok or the error code)',
        ['method', 'outcome'],
      ),
      duration: slotHistogram(
        metrics,
        'l2stack_rpc_call_duration_seconds',
        'Time to answer one JSON-RPC call',
        ['method'],
        [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      ),
    };
    const checks = compileParamChecks(spec.dereferenced.methods);
    for (const m of methods) {
      const params = checks.get(m.name);
      if (!params) throw new Error(`handler ${m.name} matches no method of specs/rpc.openrpc.json`);
      if (this.served.has(m.name)) throw new Error(`handler ${m.name} is registered twice`);
      this.served.set(m.name, {
        handler: m.handler,
        params,
        ok: this.metrics.calls.child(m.name, 'ok'),
        duration: this.metrics.duration.child(m.name),
      });
    }
    const missing = [...checks.keys()].filter((name) => !this.served.has(name));
    if (missing.length > 0) throw new Error(`no handler for ${missing.join(', ')} (specs/rpc.openrpc.json)`);
  }

  /** Whether the method is served (so metrics labels stay bounded: anything else is "other"). */
  isServed(method: string): boolean {
    return method === 'rpc.discover' || this.served.has(method);
  }

  /** A promise only when the handler waits on something (the node, the database); else the answer now. */
  call(method: string, params: unknown, scope: CallScope = {}): Awaitable<CallResult> {
    const started = performance.now();
    const served = this.served.get(method);
    let out: Awaitable<CallResult>;
    try {
      out = served !== undefined ? this.run(method, served, params, scope) : this.unserved(method, params);
    } catch (err) {
      out = this.failed(method, err);
    }
    if (out instanceof Promise) {
      return out
        .catch((err: unknown) => this.failed(method, err))
        .then((o) => this.finish(method, served, o, scope, started));
    }
    return this.finish(method, served, out, scope, started);
  }

  private failed(method: string, err: unknown): CallResult {
    this.logger.error({ err, method }, 'dispatch failed');
    return { error: toWireError(err) };
  }

  /** The answer charged to the reply's budget, and the call's metrics. */
  private finish(
    method: string,
    served: Served | undefined,
    answer: CallResult,
    scope: CallScope,
    started: number,
  ): CallResult {
    const out = chargeAnswer(answer, scope.budget);
    const seconds = (performance.now() - started) / 1000;
    if (served !== undefined && !('error' in out)) {
      served.ok.inc();
      served.duration.observe(seconds);
    } else {
      const label = this.isServed(method) ? method : 'other';
      this.metrics.calls.inc([label, 'error' in out ? String(out.error.code) : 'ok']);
      this.metrics.duration.observe([label], seconds);
    }
    return out;
  }

  /** A served method: params by position, each valid by its schema and the rules, then the handler. */
  private run(method: string, served: Served, params: unknown, scope: CallScope): Awaitable<CallResult> {
    if (params !== undefined && !Array.isArray(params))
      return invalidParams(`${method} takes its params by position (a JSON array), got an object`);
    const list = (params ?? []) as unknown[];
    const names = served.params.names;
    if (list.length > names.length) {
      const takes = names.length === 0 ? 'no params' : `at most ${names.length} (${names.join(', ')})`;
      return invalidParams(`${method} takes ${takes}, got ${list.length}`);
    }
    const invalid = served.params.check(list);
    if (invalid) return { error: toWireError(invalid) };
    let result: Awaitable<unknown>;
    try {
      // Each param has passed its schema; the rules across members come next.
      checkParamRules(method, names, list);
      result = served.handler(this.ctx, list, scope);
    } catch (err) {
      return { error: this.handlerError(method, err) };
    }
    if (!(result instanceof Promise)) return answered(result);
    return result.then(answered, (err: unknown): CallResult => ({ error: this.handlerError(method, err) }));
  }

  /** rpc.discover, or a method the spec does not have. */
  private unserved(method: string, params: unknown): CallResult {
    if (method !== 'rpc.discover') return { error: toWireError(rpcErrors.methodNotFound(method)) };
    if (params !== undefined && !(Array.isArray(params) && params.length === 0)) {
      return { error: toWireError(rpcErrors.invalidParams('rpc.discover takes no params')) };
    }
    return { result: this.spec.document };
  }

  /** A handler's failure as a wire error; a failure that is not an RpcError is a bug and is logged. */
  private handlerError(method: string, err: unknown): WireError {
    if (!(err instanceof RpcError)) this.logger.error({ err, method }, 'handler failed');
    return toWireError(err);
  }
}

const answered = (result: unknown): CallResult => ({ result: result === undefined ? null : result });

const invalidParams = (detail: string): CallResult => ({
  error: { code: RpcCodes.InvalidParams, message: `invalid params: ${detail}` },
});

/** Counts one call's answer against the reply's budget: the answer, or the -32005 error replacing it. */
function chargeAnswer(out: CallResult, b: ResponseBudget | undefined): CallResult {
  if (!b || !('result' in out)) return out;
  // Answers are JSON of hex strings and numbers (ASCII), so string length is the byte count.
  const size = b.full
    ? 0
    : out.result instanceof RawJson
      ? out.result.length
      : JSON.stringify(out.result ?? null).length;
  return b.fits(size) ? out : { error: toWireError(responseTooLarge(b.limit)) };
}
