import type { RequestHandler } from 'express';
import { resolveRef, type OpenApiDocument } from './spec.js';

/**
 * Lenient spelling of boolean query parameters, driven by the spec, before express-openapi-validator.
 *
 * Why: the validator's coercion knows only `true` and `false`, but clients generated in other languages
 * write a boolean their own way: Python's `str(True)` is `True`, others send `1`/`0`. Refusing those
 * with 400 was needless strictness (issue 14), so `True`/`False`/`1`/`0` are rewritten to `true`/`false`
 * here; any other value still reaches the validator and is refused there. The accepted forms are
 * documented in each boolean parameter's description in the spec.
 */

const SPELLINGS: Record<string, boolean> = {
  true: true,
  false: false,
  True: true,
  False: false,
  '1': true,
  '0': false,
};

/** The boolean a query value spells, or undefined when it is not one of the accepted forms. */
export function queryBoolean(value: string): boolean | undefined {
  return Object.hasOwn(SPELLINGS, value) ? SPELLINGS[value] : undefined;
}

/**
 * Names of the query parameters declared boolean in the spec. A name that is boolean in one operation and
 * something else in another is left out, so no string parameter is ever rewritten.
 */
export function booleanQueryNames(doc: OpenApiDocument): Set<string> {
  const kinds = new Map<string, Set<boolean>>();
  const note = (param: unknown) => {
    const p = resolveRef(doc, param);
    if (p.in !== 'query' || typeof p.name !== 'string') return;
    const isBoolean = resolveRef(doc, p.schema).type === 'boolean';
    if (!kinds.has(p.name)) kinds.set(p.name, new Set());
    kinds.get(p.name)!.add(isBoolean);
  };
  for (const item of Object.values(doc.paths ?? {}) as Record<string, unknown>[]) {
    for (const param of (item.parameters as unknown[] | undefined) ?? []) note(param);
    for (const op of Object.values(item)) {
      for (const param of (op as { parameters?: unknown[] } | undefined)?.parameters ?? []) note(param);
    }
  }
  return new Set([...kinds].filter(([, k]) => k.size === 1 && k.has(true)).map(([name]) => name));
}

export function lenientBooleanParams(doc: OpenApiDocument): RequestHandler {
  const names = booleanQueryNames(doc);
  return (req, _res, next) => {
    if (names.size === 0) return next();
    const query = req.query as Record<string, unknown>;
    let rewritten: Record<string, unknown> | undefined;
    for (const name of names) {
      const v = query[name];
      if (typeof v !== 'string' || v === 'true' || v === 'false') continue;
      const b = queryBoolean(v);
      if (b !== undefined) (rewritten ??= { ...query })[name] = String(b);
    }
    // express 5 re-parses req.query on every read: pin the rewritten object as the request's own value.
    if (rewritten)
      Object.defineProperty(req, 'query', { value: rewritten, writable: true, configurable: true, enumerable: true });
    next();
  };
}
