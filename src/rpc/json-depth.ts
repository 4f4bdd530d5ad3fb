/**
 * Nesting limits for request bodies. Everything after JSON.parse that walks a value (the raw-id scanner,
 * ajv through the Router, JSON.stringify when forwarding or in error messages, the logger) recurses once
 * per level, so a body nested 10,000 deep overflowed the stack. These two functions never recurse:
 * `textDepth` scans the raw text before anything else looks at it, and `valueDepth` measures one parsed
 * value (V8's JSON.parse itself is iterative, so parsing a deep body is safe; walking it is not).
 */

const OPEN_SQUARE = 0x5b;
const OPEN_CURLY = 0x7b;
const CLOSE_SQUARE = 0x5d;
const CLOSE_CURLY = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The deepest nesting of [ and { in a JSON text, counting only outside strings; stops early once it
 * exceeds `stopAbove` (so a hostile body costs one partial pass). Works on invalid JSON too: the caller
 * still parses and reports -32700 when the text is not JSON.
 */
export function textDepth(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Jump to the closing quote: one that is preceded by an even number of backslashes.
      for (;;) {
        const end = text.indexOf('"', i + 1);
        if (end === -1) return max;
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++;
        i = end;
        if (slashes % 2 === 0) break;
      }
    } else if (c === OPEN_SQUARE || c === OPEN_CURLY) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > stopAbove) return max;
      }
    } else if (c === CLOSE_SQUARE || c === CLOSE_CURLY) {
      depth--;
    }
  }
  return max;
}

/** Nesting of a parsed JSON value: 0 for a scalar, 1 for [] or {}, and so on; an explicit stack. */
export function valueDepth(value: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const here = d + 1;
    if (here > max) max = here;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push([child, here]);
    }
  }
  return max;
}

/** The error text shared by both answers (-32600 and -32602), naming the limit and its variable. */
export const depthMessage = (where: string, limit: number) =>
  `${where} nests deeper than ${limit} levels of arrays and objects (RPC_MAX_JSON_DEPTH)`;
