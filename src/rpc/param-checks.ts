import Ajv from 'ajv';
import type { RpcError } from '../common/errors.js';
import { invalidParam, type AjvError } from './param-errors.js';
import type { SpecMethod } from './spec.js';

/** One positional param of a method: its name, whether it must be given, and its schema compiled once. */
interface ParamCheck {
  required: boolean;
  schema: Record<string, unknown> | undefined;
  valid: ((value: unknown) => boolean) & { errors?: AjvError[] | null };
}

/** The compiled checks of one method's positional params, in order. */
export interface ParamChecks {
  readonly names: readonly string[];
  /** The first param that fails its schema, as the -32602 to answer; undefined when every param passes. */
  check(params: readonly unknown[]): RpcError | undefined;
}

const accept = Object.assign(() => true, { errors: null });

/**
 * Compiles every param schema of specs/rpc.openrpc.json once, at start (ajv 6 with its default options: the
 * validator @open-rpc's tooling uses, so ajv's error paths and keywords, which param-errors.ts words, are
 * the ones the spec's schemas were written and tested against). A call then costs a map lookup and the
 * compiled functions. Missing optional params are skipped; a missing required one fails its schema.
 */
export function compileParamChecks(methods: readonly SpecMethod[]): Map<string, ParamChecks> {
  const ajv = new Ajv();
  const out = new Map<string, ParamChecks>();
  for (const m of methods) {
    const checks: ParamCheck[] = m.params.map((p, i) => {
      if (p.schema === undefined) return { required: p.required === true, schema: undefined, valid: accept };
      const key = `${m.name}/${i}`;
      ajv.addSchema(p.schema as object, key);
      const valid = ajv.getSchema(key);
      if (!valid) throw new Error(`no compiled schema for param ${i} of ${m.name}`);
      return {
        required: p.required === true,
        schema: p.schema as Record<string, unknown>,
        valid: valid as ParamCheck['valid'],
      };
    });
    const names = m.params.map((p) => p.name);
    out.set(m.name, {
      names,
      check(params) {
        for (let i = 0; i < checks.length; i++) {
          const c = checks[i]!;
          const value = params[i];
          if (value === undefined && !c.required) continue;
          if (!c.valid(value)) return invalidParam(names, i, c.schema ?? {}, value, c.valid.errors ?? []);
        }
        return undefined;
      },
    });
  }
  return out;
}
