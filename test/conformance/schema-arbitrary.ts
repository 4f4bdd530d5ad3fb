import fc from 'fast-check';

type Schema = Record<string, unknown>;

/** Long fixed-length hex patterns (blobs: 262,144 digits) are built from bytes: a regex walk that long is slow. */
const FIXED_HEX = /^\^0x\[0-9a-fA-F\]\{(\d+)\}\$$/;

/**
 * A fast-check arbitrary of values that a (dereferenced) JSON Schema accepts, for the subset our OpenRPC
 * document uses: type, enum, const, pattern, oneOf/anyOf, properties/required/additionalProperties,
 * propertyNames, items/minItems/maxItems, minimum/maximum. It is what a new user's OpenRPC fuzzer does:
 * values the spec calls valid, including the long and odd ones (65-digit quantities, empty objects where
 * a schema only says "object"), so that whatever the spec lets through can be sent on to a node.
 */
export function arbitraryFor(schema: unknown, depth = 0): fc.Arbitrary<unknown> {
  if (schema === true || schema === undefined) return fc.jsonValue({ maxDepth: 1 });
  if (schema === false || schema === null || typeof schema !== 'object') return fc.constant(null);
  const s = schema as Schema;
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  if ('const' in s) return fc.constant(s.const);
  const branches = (s.oneOf ?? s.anyOf) as unknown[] | undefined;
  if (Array.isArray(branches)) return fc.oneof(...branches.map((b) => arbitraryFor(b, depth + 1)));
  if (Array.isArray(s.type))
    return fc.oneof(...(s.type as string[]).map((t) => arbitraryFor({ ...s, type: t }, depth + 1)));
  switch (s.type) {
    case 'string':
      return stringArbitrary(s);
    case 'integer':
      return fc.integer({
        min: typeof s.minimum === 'number' ? s.minimum : -1_000_000,
        max: typeof s.maximum === 'number' ? s.maximum : 1_000_000,
      });
    case 'number':
      return fc.double({
        min: typeof s.minimum === 'number' ? s.minimum : -1e6,
        max: typeof s.maximum === 'number' ? s.maximum : 1e6,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const minLength = typeof s.minItems === 'number' ? s.minItems : 0;
      const maxLength = Math.max(
        minLength,
        Math.min(typeof s.maxItems === 'number' ? s.maxItems : 3, depth > 3 ? 1 : 3),
      );
      return fc.array(arbitraryFor(s.items, depth + 1), { minLength, maxLength });
    }
    case 'object':
    default:
      return objectArbitrary(s, depth);
  }
}

function stringArbitrary(s: Schema): fc.Arbitrary<unknown> {
  if (typeof s.pattern !== 'string')
    return fc.string({
      minLength: (s.minLength as number | undefined) ?? 0,
      maxLength: (s.maxLength as number | undefined) ?? 20,
    });
  const fixed = FIXED_HEX.exec(s.pattern);
  if (fixed && Number(fixed[1]) > 256) {
    const bytes = Number(fixed[1]) / 2;
    return fc.constantFrom(0, 1, 255).map((b) => `0x${Buffer.alloc(bytes, b).toString('hex')}`);
  }
  // Hex patterns at size "large": unbounded repetitions (`[0-9a-f]*`) reach past 64 digits, as a fuzzer's
  // would. Other patterns (durations) at the default size: nested `(…)+` groups get slow when large.
  return fc.stringMatching(new RegExp(s.pattern), { size: /\[0-9a-f/i.test(s.pattern) ? 'large' : undefined });
}

function objectArbitrary(s: Schema, depth: number): fc.Arbitrary<unknown> {
  const props = (s.properties ?? {}) as Record<string, unknown>;
  const required = new Set((s.required as string[] | undefined) ?? []);
  const names = Object.keys(props);
  const known =
    names.length === 0
      ? fc.constant({} as Record<string, unknown>)
      : fc.record(Object.fromEntries(names.map((n) => [n, arbitraryFor(props[n], depth + 1)])), {
          requiredKeys: names.filter((n) => required.has(n)),
        });
  const extra = s.additionalProperties;
  if (extra === false || (names.length > 0 && extra === undefined)) return known;
  const keys = s.propertyNames
    ? (arbitraryFor({ type: 'string', ...(s.propertyNames as Schema) }, depth + 1) as fc.Arbitrary<string>)
    : fc.string({ maxLength: 8 });
  const values = extra === undefined || extra === true ? fc.jsonValue({ maxDepth: 1 }) : arbitraryFor(extra, depth + 1);
  return fc.tuple(known, fc.dictionary(keys, values, { maxKeys: depth > 3 ? 1 : 2 })).map(([a, b]) => ({ ...b, ...a }));
}
