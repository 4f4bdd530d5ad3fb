/**
 * Nesting limits for request bodies. Everything after JSON.parse that walks a value (ajv, JSON.stringify
 * when forwarding or in error messages, the logger) recurses once per level, so a body nested 10,000 deep
 * overflowed the stack. Neither measure recurses: the body's text is measured before anything else looks
 * at it (scanBody in raw-ids.ts), and `valueDepth` measures one parsed value (V8's JSON.parse itself is
 * iterative, so parsing a deep body is safe; walking it is not).
 */

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
