import { compileExpression, useDotAccessOperator } from 'filtrex';
import { Interface, Result, type FunctionFragment } from 'ethers';

/**
 * The calldata filter: a filtrex expression over `calldata.funcSignature` (the 4-byte selector, lower-case
 * hex) and the arguments of the configured function interface decoded by name, e.g.
 * `calldata.funcSignature == "0x26dfbc20" and calldata.amount > 0`.
 *
 * Unlike a plain filtrex setup, integers stay exact: uint/int arguments are bigints and the comparison
 * operators compare them mathematically with the expression's numbers. Addresses and bytes are lower-case
 * hex, and `==` between two 0x-strings ignores letter case (checksummed literals match).
 */

type Evaluate = (context: unknown) => unknown;

const isHex = (x: unknown): x is string => typeof x === 'string' && x.startsWith('0x');
const numeric = (x: unknown): x is number | bigint => typeof x === 'number' || typeof x === 'bigint';

function compare(a: unknown, b: unknown): number {
  if (!numeric(a) || !numeric(b)) throw new TypeError(`cannot compare ${typeof a} with ${typeof b}`);
  // Mixed bigint/number comparisons are exact in JavaScript.
  return a < b ? -1 : a > b ? 1 : 0;
}

function equals(a: unknown, b: unknown): boolean {
  if (numeric(a) && numeric(b)) return compare(a, b) === 0;
  if (isHex(a) && isHex(b)) return a.toLowerCase() === b.toLowerCase();
  return a === b;
}

function arithmetic(op: (x: number, y: number) => number, big: (x: bigint, y: bigint) => bigint) {
  return (a: unknown, b: unknown) => {
    if (typeof a === 'bigint' && typeof b === 'bigint') return big(a, b);
    if (typeof a === 'bigint' && typeof b === 'number' && Number.isInteger(b)) return big(a, BigInt(b));
    if (typeof a === 'number' && Number.isInteger(a) && typeof b === 'bigint') return big(BigInt(a), b);
    if (typeof a === 'number' && typeof b === 'number') return op(a, b);
    throw new TypeError(`expected numbers, got ${typeof a} and ${typeof b}`);
  };
}

const operators = {
  '==': equals,
  '!=': (a: unknown, b: unknown) => !equals(a, b),
  '<': (a: unknown, b: unknown) => compare(a, b) < 0,
  '<=': (a: unknown, b: unknown) => compare(a, b) <= 0,
  '>': (a: unknown, b: unknown) => compare(a, b) > 0,
  '>=': (a: unknown, b: unknown) => compare(a, b) >= 0,
  '+': arithmetic(
    (x, y) => x + y,
    (x, y) => x + y,
  ),
  '-': (a: unknown, b?: unknown) =>
    b === undefined
      ? typeof a === 'bigint'
        ? -a
        : -(a as number)
      : arithmetic(
          (x, y) => x - y,
          (x, y) => x - y,
        )(a, b),
  '*': arithmetic(
    (x, y) => x * y,
    (x, y) => x * y,
  ),
};

/** Compiles an expression; `error` describes a syntax error (used by the config checks). */
export function compileCalldataFilter(expression: string): { evaluate?: Evaluate; error?: string } {
  try {
    return { evaluate: compileExpression(expression, { customProp: useDotAccessOperator, operators }) as Evaluate };
  } catch (err) {
    return { error: (err as Error).message.split('\n').join(' ') };
  }
}

/** Plain values for the expression: bigints kept, addresses and bytes lower-case, structs as objects. */
function plain(value: unknown): unknown {
  if (value instanceof Result) {
    try {
      const obj = value.toObject();
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(obj)) out[k] = plain(v);
      return out;
    } catch {
      return value.toArray().map(plain);
    }
  }
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'string' && value.startsWith('0x')) return value.toLowerCase();
  return value;
}

export interface CalldataFilter {
  /** Whether the message's calldata passes; `reason` says why not (stored on EXCLUDED messages). */
  test(calldata: string): { pass: true } | { pass: false; reason: string };
}

export function createCalldataFilter(options: { expression: string; functionInterface: string }): CalldataFilter {
  const { evaluate, error } = compileCalldataFilter(options.expression);
  if (!evaluate) throw new Error(`invalid calldata filter: ${error}`);
  const iface = new Interface([options.functionInterface]);
  const fragment = iface.fragments.find((f) => f.type === 'function') as FunctionFragment;
  const selector = iface.getFunction(fragment.name)!.selector.toLowerCase();
  return {
    test(calldata) {
      const data = calldata.toLowerCase();
      const calldataCtx: Record<string, unknown> = { funcSignature: data.slice(0, 10) };
      if (data.slice(0, 10) === selector) {
        try {
          const decoded = iface.decodeFunctionData(fragment, data);
          fragment.inputs.forEach((input, i) => {
            if (input.name) calldataCtx[input.name] = plain(decoded[i]);
          });
        } catch (err) {
          return {
            pass: false,
            reason: `calldata does not decode as ${fragment.format('sighash')}: ${(err as Error).message.split('(')[0]!.trim()}`,
          };
        }
      }
      const result = evaluate({ calldata: calldataCtx });
      if (result === true) return { pass: true };
      if (result instanceof Error)
        return { pass: false, reason: `calldata filter could not be evaluated: ${result.message}` };
      return { pass: false, reason: 'calldata does not match the calldata filter' };
    },
  };
}
