import { RpcError } from '../common/errors.js';
import { RpcCodes } from './errors.js';

/** One error of ajv 6 (the validator param-checks.ts compiles), as it reports it. */
export interface AjvError {
  keyword: string;
  dataPath: string;
  schemaPath: string;
  params: Record<string, unknown>;
  message?: string;
}

type Schema = Record<string, unknown>;

/** Walks "#/properties/fromBlock/oneOf" inside a (dereferenced) schema. */
function schemaAt(root: Schema, path: string): Schema | undefined {
  let node: unknown = root;
  for (const seg of path.replace(/^#\/?/, '').split('/').filter(Boolean)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[decodeURIComponent(seg.replace(/~1/g, '/').replace(/~0/g, '~'))];
  }
  return node !== null && typeof node === 'object' ? (node as Schema) : undefined;
}

/** Walks ajv 6 data paths (".a", "[0]", "['a-b']") inside the received value. */
function valueAt(value: unknown, dataPath: string): unknown {
  let node = value;
  for (const m of dataPath.matchAll(/\.([A-Za-z_$][\w$]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]/g)) {
    if (node === null || typeof node !== 'object') return undefined;
    const key = m[1] ?? m[2] ?? m[3]!;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

const show = (v: unknown) => {
  const s = JSON.stringify(v);
  return s === undefined ? 'undefined' : s.length > 80 ? `${s.slice(0, 77)}...` : s;
};

function describeSchema(s: Schema | undefined): string {
  if (!s) return 'a value of the documented form';
  const title = typeof s.title === 'string' ? s.title : undefined;
  const desc = typeof s.description === 'string' ? s.description.split('. ')[0]!.replace(/\.$/, '') : undefined;
  if (Array.isArray(s.enum)) return `one of ${s.enum.map(String).join(', ')}`;
  if (title && desc) return `${title} (${desc})`;
  return (
    title ??
    desc ??
    (typeof s.type === 'string' ? `a${/^[aeiou]/.test(s.type) ? 'n' : ''} ${s.type}` : 'a value of the documented form')
  );
}

function reason(err: AjvError, root: Schema, received: unknown): string {
  const value = valueAt(received, err.dataPath);
  const here = schemaAt(root, err.schemaPath.replace(/\/[^/]+$/, ''));
  switch (err.keyword) {
    case 'required': {
      const member = String(err.params.missingProperty).replace(/^\./, '');
      const propSchema = schemaAt(here ?? {}, `#/properties/${member}`);
      return `missing required member "${member}"${propSchema && Array.isArray(propSchema.enum) ? `; allowed: ${propSchema.enum.join(', ')}` : ''}`;
    }
    case 'enum':
      return `${show(value)} is not allowed; allowed: ${(err.params.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'additionalProperties':
      return `unknown member "${String(err.params.additionalProperty)}"`;
    case 'type':
      return `expected ${String(err.params.type)}, got ${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value}`;
    case 'pattern':
    case 'oneOf':
    case 'anyOf':
      return `${show(value)} is not ${describeSchema(here)}`;
    case 'maxItems':
    case 'minItems':
    case 'minimum':
    case 'maximum':
      return `${show(value)} ${err.message ?? 'is out of range'}`;
    default:
      return err.message ?? 'is not valid';
  }
}

/**
 * The -32602 of a param that failed its schema: one message naming the parameter, the member inside it,
 * and why, from ajv's errors for it (param-checks.ts), e.g.
 * `invalid params: param 0 (filter) at filter.fromBlock: "pending" is not LogsBlockBound (Bound of a log range: …)`.
 */
export function invalidParam(
  paramNames: readonly string[],
  index: number,
  schema: Schema,
  received: unknown,
  errors: readonly AjvError[],
): RpcError {
  const name = paramNames[index] ?? `#${index}`;
  const where = `param ${index} (${name})`;
  if (received === undefined)
    return new RpcError(RpcCodes.InvalidParams, `invalid params: missing required ${where}`, { param: name, index });
  // ajv lists the branch failures of a oneOf before the oneOf itself: the oneOf (whose schema has a title
  // and description) explains best. Otherwise an enum or required error names the accepted values.
  const last = errors[errors.length - 1];
  const pick =
    last && (last.keyword === 'oneOf' || last.keyword === 'anyOf')
      ? last
      : (errors.find((e) => e.keyword === 'enum' || e.keyword === 'required' || e.keyword === 'additionalProperties') ??
        last);
  if (!pick)
    return new RpcError(RpcCodes.InvalidParams, `invalid params: ${where} is not ${describeSchema(schema)}`, {
      param: name,
      index,
    });
  const path = pick.dataPath.replace(/\['([^']*)'\]/g, '.$1');
  const msg = `invalid params: ${where}${path ? ` at ${name}${path}` : ''}: ${reason(pick, schema, received)}`;
  return new RpcError(RpcCodes.InvalidParams, msg, { param: name, index, path: `${name}${path}` });
}
