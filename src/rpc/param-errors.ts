import { RpcError } from '../common/errors.js';
import { RpcCodes } from './errors.js';

interface AjvError {
  keyword: string;
  dataPath: string;
  schemaPath: string;
  params: Record<string, unknown>;
  message?: string;
}

interface ValidationError {
  paramIndex: number;
  expectedSchema: Record<string, unknown>;
  receievedParam?: unknown;
  message: string;
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
  return title ?? desc ?? (typeof s.type === 'string' ? `a${/^[aeiou]/.test(s.type) ? 'n' : ''} ${s.type}` : 'a value of the documented form');
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
      return `${show(value)} is not ${describeSchema(here)}`;
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
 * Turns the Router's -32602 data (ParameterValidationError objects carrying ajv's errors in their message)
 * into one message naming the parameter, the member inside it, and why, e.g.
 * `invalid params: filter.fromBlock: "pending" is not LogsBlockBound (Bound of a log range: …)`.
 */
export function invalidParamsFromRouter(paramNames: readonly string[], data: unknown): RpcError {
  const first = (Array.isArray(data) ? data[0] : undefined) as ValidationError | undefined;
  if (!first || typeof first.paramIndex !== 'number') return new RpcError(RpcCodes.InvalidParams, 'invalid params');
  const name = paramNames[first.paramIndex] ?? `#${first.paramIndex}`;
  const where = `param ${first.paramIndex} (${name})`;
  if (!('receievedParam' in first) || first.receievedParam === undefined) {
    return new RpcError(RpcCodes.InvalidParams, `invalid params: missing required ${where}`, { param: name, index: first.paramIndex });
  }
  let ajvErrors: AjvError[] = [];
  const marker = first.message.indexOf('The Validation errors: \n');
  if (marker >= 0) {
    try {
      ajvErrors = JSON.parse(first.message.slice(marker + 'The Validation errors: \n'.length)) as AjvError[];
    } catch {
      ajvErrors = [];
    }
  }
  // ajv lists the branch failures of a oneOf before the oneOf itself: the oneOf (whose schema has a title
  // and description) explains best. Otherwise an enum or required error names the accepted values.
  const last = ajvErrors[ajvErrors.length - 1];
  const pick =
    last && (last.keyword === 'oneOf' || last.keyword === 'anyOf')
      ? last
      : (ajvErrors.find((e) => e.keyword === 'enum' || e.keyword === 'required' || e.keyword === 'additionalProperties') ?? last);
  if (!pick) return new RpcError(RpcCodes.InvalidParams, `invalid params: ${where} is not ${describeSchema(first.expectedSchema)}`, { param: name, index: first.paramIndex });
  const path = pick.dataPath.replace(/\['([^']*)'\]/g, '.$1');
  const msg = `invalid params: ${where}${path ? ` at ${name}${path}` : ''}: ${reason(pick, first.expectedSchema, first.receievedParam)}`;
  return new RpcError(RpcCodes.InvalidParams, msg, { param: name, index: first.paramIndex, path: `${name}${path}` });
}
