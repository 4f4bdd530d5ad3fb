import type { RequestHandler } from 'express';
import { badRequest } from '../errors.js';
import { resolveRef, type OpenApiDocument } from './spec.js';

/**
 * Strict parsing of numeric query and path parameters, driven by the spec, before express-openapi-validator sees them.
 *
 * Why: the validator coerces with `Number()`, so `1e309` becomes Infinity-then-null and slips through `maximum`, `1e2`
 * and `0x10` are accepted as 100 and 16, and a handler then hands a null or a float to the database. Here every
 * parameter whose schema type is `integer` must be written in decimal digits (an optional minus sign, nothing else) and
 * be a safe integer; a `number` must be a plain decimal (digits, optionally a fraction). Anything else is a 400 naming
 * the parameter and the expected form. New parameters are covered as soon as the spec declares them.
 */

type NumericType = 'integer' | 'number';

interface NumericParam {
  name: string;
  in: 'query' | 'path';
  type: NumericType;
}

interface Operation {
  method: string;
  pattern: RegExp;
  /** Names of the path template's parameters, in order of the regex groups. */
  pathNames: string[];
  params: NumericParam[];
}

const INTEGER = /^-?\d+$/;
const DECIMAL = /^-?\d+(\.\d+)?$/;

/** The schema's numeric type, looking through $ref and single-branch allOf/oneOf/anyOf. */
function numericType(doc: OpenApiDocument, schema: unknown): NumericType | undefined {
  const s = resolveRef(doc, schema);
  if (s.type === 'integer' || s.type === 'number') return s.type;
  for (const key of ['allOf', 'oneOf', 'anyOf'] as const) {
    const branches = s[key];
    if (!Array.isArray(branches)) continue;
    const types = branches.map((b) => numericType(doc, b));
    if (types.includes('integer')) return 'integer';
    if (types.includes('number')) return 'number';
  }
  return undefined;
}

/** Every operation of the spec with its numeric query and path parameters (path-level ones included). */
export function numericParameters(doc: OpenApiDocument): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    const shared = ((item as { parameters?: unknown[] }).parameters ?? []).map((p) => resolveRef(doc, p));
    for (const method of ['get', 'post', 'put', 'patch', 'delete'] as const) {
      const op = item[method];
      if (!op) continue;
      const own = ((op.parameters as unknown[] | undefined) ?? []).map((p) => resolveRef(doc, p));
      const byKey = new Map<string, Record<string, unknown>>();
      for (const p of [...shared, ...own]) byKey.set(`${String(p.in)}:${String(p.name)}`, p);
      const params: NumericParam[] = [];
      for (const p of byKey.values()) {
        if (p.in !== 'query' && p.in !== 'path') continue;
        const type = numericType(doc, p.schema);
        if (type) params.push({ name: String(p.name), in: p.in, type });
      }
      const pathNames: string[] = [];
      const source = path
        .split(/(\{[^}]+\})/)
        .map((part) => {
          const m = /^\{([^}]+)\}$/.exec(part);
          if (!m) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          pathNames.push(m[1]!);
          return '([^/]+)';
        })
        .join('');
      ops.push({ method: method.toUpperCase(), pattern: new RegExp(`^${source}/?$`), pathNames, params });
    }
  }
  // Literal segments win over templates (/a/b before /a/{x}), as the router decides; operations without numeric
  // parameters stay in the list so a request is never checked against the wrong template.
  return ops.sort((a, b) => a.pathNames.length - b.pathNames.length);
}

const EXPECTED: Record<NumericType, string> = {
  integer: 'an integer written in decimal digits (e.g. 10), not an exponent, hex, fraction or non-finite value',
  number: 'a decimal number (e.g. 1.5), not an exponent, hex or non-finite value',
};

/** Why `raw` is not a well-formed value of `type`, or undefined when it is. */
export function numericProblem(type: NumericType, raw: string): string | undefined {
  const shown = raw.length > 40 ? `${raw.slice(0, 37)}...` : raw;
  if (!(type === 'integer' ? INTEGER : DECIMAL).test(raw)) return `must be ${EXPECTED[type]}; got "${shown}"`;
  const n = Number(raw);
  if (!Number.isFinite(n) || (type === 'integer' && !Number.isSafeInteger(n)))
    return `must be ${EXPECTED[type]} within the safe range; got "${shown}"`;
  return undefined;
}

export function strictNumericParams(doc: OpenApiDocument): RequestHandler {
  const ops = numericParameters(doc);
  return (req, _res, next) => {
    const errors: { path: string; message: string }[] = [];
    for (const op of ops) {
      if (op.method !== req.method && !(op.method === 'GET' && req.method === 'HEAD')) continue;
      const match = op.pattern.exec(req.path);
      if (!match) continue;
      for (const p of op.params) {
        let values: unknown[];
        if (p.in === 'path') {
          const raw = match[op.pathNames.indexOf(p.name) + 1];
          try {
            values = [raw === undefined ? undefined : decodeURIComponent(raw)];
          } catch {
            values = [raw];
          }
        } else {
          const q = (req.query as Record<string, unknown>)[p.name];
          values = Array.isArray(q) ? q : [q];
        }
        for (const v of values) {
          if (v === undefined) continue; // absence is the validator's business (required, default)
          const problem = numericProblem(p.type, String(v));
          if (problem) errors.push({ path: `${p.in}/${p.name}`, message: problem });
        }
      }
      break;
    }
    if (errors.length === 0) return next();
    next(badRequest(errors.map((e) => `${e.path} ${e.message}`).join('; '), { errors }));
  };
}
