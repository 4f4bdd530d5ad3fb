/**
 * Environment-variable parsing shared by every service.
 *
 * Each variable is declared once with its expected form; `parseEnv` checks all of them and reports every
 * problem together, by variable name, so an operator fixes a bad deployment in one pass instead of one
 * restart per typo. Values marked secret never appear in messages or in the logged effective config.
 */

export type Sensitivity = 'public' | 'secret' | 'url';

export interface VarSpec<T> {
  /** Human description of the accepted form, used in error messages ("a boolean (true or false)"). */
  expected: string;
  required: boolean;
  sensitivity: Sensitivity;
  default: T | undefined;
  /** One line for operators: what the variable does (written into .env.example by `npm run codegen`). */
  doc: string | undefined;
  /** Set only by tests and benches: declared and parsed like the others, left out of .env.example. */
  forTests: boolean;
  /** Returns the parsed value, or a string explaining why the raw value was refused. */
  parse: (raw: string) => { ok: true; value: T } | { ok: false; reason?: string };
  /** The same variable with its one-line description (what .env.example says of it). */
  describe(doc: string): this;
  /** The same variable, set only by tests and benches: left out of .env.example. */
  testOnly(): this;
}

type Parsed<S> = S extends VarSpec<infer T> ? T : never;
/** Type-level record of whether a variable always has a value (required, or defaulted). */
interface Flags<O> {
  always: O extends { required: true }
    ? true
    : O extends { default: infer D }
      ? undefined extends D
        ? false
        : true
      : false;
}
export type EnvValues<Specs extends Record<string, VarSpec<unknown>>> = {
  readonly [K in keyof Specs]: Specs[K] extends { always: true } ? Parsed<Specs[K]> : Parsed<Specs[K]> | undefined;
};

interface Options<T> {
  required?: boolean;
  default?: T;
  sensitivity?: Sensitivity;
}

function spec<T, O extends Options<T>>(expected: string, parse: VarSpec<T>['parse'], opts: O): VarSpec<T> & Flags<O> {
  return {
    expected,
    parse,
    required: opts.required ?? false,
    default: opts.default,
    sensitivity: opts.sensitivity ?? 'public',
    doc: undefined,
    forTests: false,
    describe(doc) {
      return { ...this, doc };
    },
    testOnly() {
      return { ...this, forTests: true };
    },
  } as VarSpec<T> & Flags<O>;
}

const ok = <T>(value: T) => ({ ok: true as const, value });
const bad = (reason?: string) => ({ ok: false as const, reason });

/** The range an `expected` text names: " from 1 to 10", " >= 1", " <= 10" or nothing. */
function rangeText(min: number | bigint | undefined, max: number | bigint | undefined): string {
  if (min !== undefined && max !== undefined) return ` from ${min} to ${max}`;
  if (min !== undefined) return ` >= ${min}`;
  return max !== undefined ? ` <= ${max}` : '';
}

const outside = <N extends number | bigint>(n: N, min: N | undefined, max: N | undefined) =>
  (min !== undefined && n < min) || (max !== undefined && n > max);

/** A kind of variable with a fixed `expected` text and `parse` (the ones without options of their own). */
const kind =
  <T>(expected: string, parse: VarSpec<T>['parse']) =>
  <O extends Options<T>>(opts: O = {} as O) =>
    spec<T, O>(expected, parse, opts);

/** A kind of 0x-prefixed hex value, checked against `pattern` and kept in lower case. */
const hexKind = (expected: string, pattern: RegExp) =>
  kind(expected, (raw) => (pattern.test(raw) ? ok(raw.toLowerCase()) : bad()));

export const env = {
  /** A variable of our own form: `expected` names it in error messages, `parse` checks and converts it. */
  custom: <T, O extends Options<T>>(expected: string, parse: VarSpec<T>['parse'], opts: O = {} as O) =>
    spec<T, O>(expected, parse, opts),

  string: kind('a non-empty string', (raw) => ok(raw)),

  boolean: kind('a boolean (true or false)', (raw) =>
    /^(true|false)$/i.test(raw) ? ok(raw.toLowerCase() === 'true') : bad(),
  ),

  integer: <O extends Options<number> & { min?: number; max?: number }>(opts: O = {} as O) =>
    spec<number, O>(
      `an integer${rangeText(opts.min, opts.max)}`,
      (raw) => {
        if (!/^-?\d+$/.test(raw)) return bad();
        const n = Number(raw);
        if (!Number.isSafeInteger(n)) return bad('out of the safe integer range');
        return outside(n, opts.min, opts.max) ? bad() : ok(n);
      },
      opts,
    ),

  /** A decimal number (for margins and percentiles); kept as the exact string too, for exact arithmetic. */
  decimal: <O extends Options<string> & { min?: number; max?: number }>(opts: O = {} as O) =>
    spec<string, O>(
      `a decimal number${rangeText(opts.min, opts.max)}`,
      (raw) => {
        if (!/^-?\d+(\.\d+)?$/.test(raw)) return bad();
        return outside(Number(raw), opts.min, opts.max) ? bad() : ok(raw);
      },
      opts,
    ),

  bigint: <O extends Options<bigint> & { min?: bigint }>(opts: O = {} as O) =>
    spec<bigint, O>(
      `an integer${rangeText(opts.min, undefined)} (decimal digits)`,
      (raw) => {
        if (!/^-?\d+$/.test(raw)) return bad();
        const n = BigInt(raw);
        return outside(n, opts.min, undefined) ? bad() : ok(n);
      },
      opts,
    ),

  address: hexKind('a 0x-prefixed 20-byte hex address', /^0x[0-9a-fA-F]{40}$/),
  hex32: hexKind('0x followed by 64 hex digits (32 bytes)', /^0x[0-9a-fA-F]{64}$/),
  hex: hexKind('a 0x-prefixed hex string', /^0x([0-9a-fA-F]{2})+$/),

  /**
   * Comma-separated 0x-prefixed 20-byte addresses, lower-cased (blanks around items and empty items ignored);
   * `expected` names the form, `unique` drops repeats.
   */
  addressList: <O extends Options<string[]>>(expected: string, opts: O & { unique?: boolean } = {} as O) =>
    spec<string[], O>(
      expected,
      (raw) => {
        const items = commaList(raw);
        const wrong = items.find((a) => !/^0x[0-9a-fA-F]{40}$/.test(a));
        if (wrong !== undefined) return bad(`"${wrong}" is not an address`);
        const lower = items.map((a) => a.toLowerCase());
        return ok(opts.unique ? [...new Set(lower)] : lower);
      },
      opts,
    ),

  url: <O extends Options<string> & { protocols?: string[] }>(opts: O = {} as O) => {
    const protocols = opts.protocols ?? ['http:', 'https:'];
    const names = protocols.map((p) => p.replace(':', '')).join(' or ');
    return spec<string, O>(
      `an absolute ${names} URL`,
      (raw) => (protocols.includes(URL.parse(raw)?.protocol ?? '') ? ok(raw) : bad()),
      { sensitivity: 'url', ...opts } as O,
    );
  },

  urlList: <O extends Options<string[]>>(opts: O = {} as O) =>
    spec<string[], O>(
      'a comma-separated list of absolute http or https URLs',
      (raw) => {
        const items = commaList(raw);
        if (items.length === 0) return bad();
        for (const item of items) {
          const protocol = URL.parse(item)?.protocol;
          if (protocol === undefined) return bad(`"${redactUrl(item)}" is not a URL`);
          if (protocol !== 'http:' && protocol !== 'https:') return bad(`"${redactUrl(item)}" is not http(s)`);
        }
        return ok(items);
      },
      { sensitivity: 'url', ...opts } as O,
    ),

  oneOf: <const T extends readonly string[], O extends Options<T[number]> = Options<T[number]>>(
    values: T,
    opts: O = {} as O,
  ) =>
    spec<T[number], O>(
      `one of ${values.join(', ')}`,
      (raw) => ((values as readonly string[]).includes(raw) ? ok(raw as T[number]) : bad()),
      opts,
    ),
};

/** The items of a comma-separated list, trimmed, empty ones left out. */
export function commaList(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Keeps scheme, host and port of a URL; drops credentials, path and query, which often carry API keys. */
export function redactUrl(raw: string): string {
  const u = URL.parse(raw);
  if (!u) return '[redacted]';
  const hidden = u.username || u.password || (u.pathname && u.pathname !== '/') || u.search;
  return `${u.protocol}//${u.host}${hidden ? '/[redacted]' : ''}`;
}

function display(spec: VarSpec<unknown>, raw: string): string {
  if (spec.sensitivity === 'secret') return '[redacted]';
  if (spec.sensitivity === 'url') return redactUrl(raw);
  return raw.length > 80 ? `${raw.slice(0, 77)}...` : raw;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(
      `Invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
    this.name = 'ConfigError';
  }
}

export interface ParsedEnv<V> {
  values: V;
  /** Every declared variable with its effective value, secrets redacted: safe to log. */
  effective: Record<string, string | undefined>;
}

/**
 * Parses `source` against the declared variables. An empty string counts as unset (compose files and
 * shells often export empty values). Throws one ConfigError listing every problem.
 */
export function parseEnv<Specs extends Record<string, VarSpec<unknown>>>(
  specs: Specs,
  source: Record<string, string | undefined>,
  extraChecks: (values: EnvValues<Specs>) => string[] = () => [],
): ParsedEnv<EnvValues<Specs>> {
  const problems: string[] = [];
  // The variables that parsed, unset ones with their default; one that failed is left out.
  const parsed: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(specs)) {
    const raw = source[name]?.trim() || undefined;
    if (raw === undefined) {
      if (s.required && s.default === undefined) problems.push(`${name}: required: set it to ${s.expected}`);
      else parsed[name] = s.default;
      continue;
    }
    const result = s.parse(raw);
    const reason = result.ok || !result.reason ? '' : `: ${result.reason}`;
    if (result.ok) parsed[name] = result.value;
    else problems.push(`${name}: expected ${s.expected}, got "${display(s, raw)}"${reason}`);
  }
  // Cross-variable rules run even when some variables failed, over the ones that parsed, so the operator
  // still sees every problem in one pass; a rule that trips over a missing value is simply skipped.
  const failed = problems.length > 0;
  try {
    problems.push(...extraChecks(parsed as EnvValues<Specs>));
  } catch (err) {
    if (!failed) throw err;
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const values = Object.freeze(parsed) as EnvValues<Specs>;
  const effective: Record<string, string | undefined> = {};
  for (const [name, s] of Object.entries(specs)) {
    const v = (values as Record<string, unknown>)[name];
    if (v === undefined) effective[name] = undefined;
    else if (s.sensitivity === 'secret') effective[name] = '[redacted]';
    else if (s.sensitivity === 'url')
      effective[name] = (Array.isArray(v) ? v : [v]).map((x) => redactUrl(String(x))).join(',');
    else effective[name] = Array.isArray(v) ? v.join(',') : String(v);
  }
  return { values, effective };
}
