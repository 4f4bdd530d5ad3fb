import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
  isSpace,
} from './upstream/raw-json.js';
/**
 * One pass over a request body's text, before JSON.parse, for the two things the parsed value cannot tell:
 * - how deep it nests ([ and { outside strings): everything after JSON.parse that walks a value recurses once
 *   per level (json-depth.ts), so a body over RPC_MAX_JSON_DEPTH is refused before anything walks it;
 * - the source text of each numeric "id": JSON.parse turns 12345678901234567890 into 12345678901234567000 and
 *   1.0 into 1, and JSON-RPC says the response carries the same id, so a numeric id is echoed as written.
 * Ids are those of the top-level object, or of each object element of a top-level array (a batch). The last
 * "id" member wins, as in JSON.parse. Works on invalid JSON too (the caller still parses and reports -32700).
 * Never recurses: a body nested hundreds of thousands deep costs one linear pass.
 */
export interface BodyScan {
  /** Deepest nesting of [ and { outside strings. */
  depth: number;
  /** Per request (index in the batch; 0 for a single call): the source text of a numeric id, else undefined. */
  numericIds: (string | undefined)[];
}

/** A character that ends a number token. */
const endsNumber = (c: number) => c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY || isSpace(c);

/**
 * Index of the quote closing the string that opens at `i` (one not preceded by an odd number of backslashes), or -1.
 */
function stringEnd(text: string, i: number): number {
  for (let from = i + 1; ;) {
    const end = text.indexOf('"', from);
    if (end === -1) return -1;
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return end;
    from = end + 1;
  }
}

/** Whether the key text (quotes included) from `start` to `end` is "id" (escapes decoded, as JSON.parse does). */
function isIdKey(text: string, start: number, end: number): boolean {
  if (end - start === 3) return text.charCodeAt(start + 1) === 0x69 && text.charCodeAt(start + 2) === 0x64;
  const slash = text.indexOf('\\', start);
  if (slash === -1 || slash > end) return false;
  try {
    return JSON.parse(text.slice(start, end + 1)) === 'id';
  } catch {
    return false;
  }
}

/** The number token at `i` (after a colon), or undefined when the value there is not a number. */
function numberAt(text: string, i: number): { token: string | undefined; next: number } {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  const c = text.charCodeAt(i);
  if (c !== 0x2d && (c < 0x30 || c > 0x39)) return { token: undefined, next: i };
  let j = i;
  while (j < text.length && !endsNumber(text.charCodeAt(j))) j++;
  return { token: text.slice(i, j), next: j };
}

export function scanBody(text: string): BodyScan {
  let i = 0;
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  // The objects whose members are read: the body itself (depth 1) or a batch's elements (depth 2).
  const target = text.charCodeAt(i) === OPEN_ARRAY ? 2 : 1;
  const numericIds: (string | undefined)[] = [];
  let element = 0;
  let depth = 0;
  let max = 0;
  // Inside a target object: whether the next string is a key, and whether the value after the colon is the id.
  let inTarget = false;
  let expectKey = false;
  let idValue = false;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (end === -1) break;
      if (inTarget && depth === target && expectKey) {
        idValue = isIdKey(text, i, end);
        expectKey = false;
      }
      i = end;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      depth++;
      if (depth > max) max = depth;
      if (depth === target) {
        inTarget = c === OPEN_OBJECT;
        expectKey = inTarget;
      }
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      if (depth === target) inTarget = false;
      depth--;
    } else if (c === COMMA) {
      if (depth === target && inTarget) expectKey = true;
      else if (target === 2 && depth === 1) element++;
    } else if (c === COLON && idValue && depth === target && inTarget) {
      idValue = false;
      const { token, next } = numberAt(text, i + 1);
      numericIds[element] = token;
      i = next - 1;
    }
  }
  return { depth: max, numericIds };
}
