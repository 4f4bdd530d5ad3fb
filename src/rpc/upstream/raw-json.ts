/**
 * A JSON value kept as the text the upstream wrote. Pass-through answers travel as RawJson from the upstream socket to
 * the client socket: the envelope writes `text` between the client's id and the closing brace, so a 600 KB eth_getLogs
 * answer is never parsed and re-serialized (that cost +681 ms p50 at 32 clients). `value` parses on demand for the few
 * callers that look inside; toJSON keeps any JSON.stringify of a RawJson correct (the slow path).
 */
/** Answers longer than this (characters) go out as bytes spliced around RawJson.bytes, not as one string. */
export const LARGE_ANSWER_CHARS = 16_384;

export class RawJson<T = unknown> {
  /**
   * Type only, never set: the result this text carries, so a raw answer is checked against the spec like a parsed one.
   */
  declare private readonly carries?: T;
  private parsed: unknown;
  private done = false;
  private decoded: string | undefined;
  private encoded: Buffer | undefined;

  constructor(text: string) {
    this.decoded = text;
  }

  /**
   * A node's ASCII bytes (its characters are its bytes), kept as they came: a large answer passed through is never
   * decoded to a string (2.7 ms for 600 KB here) nor encoded back (3.8 ms), unless someone reads `text`.
   */
  static ofAscii<T = unknown>(bytes: Buffer): RawJson<T> {
    const raw = new RawJson<T>('');
    raw.decoded = undefined;
    raw.encoded = bytes;
    return raw;
  }

  get text(): string {
    return (this.decoded ??= this.encoded!.toString('latin1'));
  }

  /** The text if it is at hand (undefined: only the bytes are, see ofAscii). */
  get decodedText(): string | undefined {
    return this.decoded;
  }

  /** Characters of the text (for an ASCII answer also its bytes), without decoding it. */
  get length(): number {
    return this.decoded !== undefined ? this.decoded.length : this.encoded!.length;
  }

  /** The first `n` characters, without decoding the rest. */
  head(n: number): string {
    return this.decoded !== undefined ? this.decoded.slice(0, n) : this.encoded!.toString('latin1', 0, n);
  }

  /**
   * The text as UTF-8, encoded once and kept: a cached answer goes to many clients, and encoding a node's 600 KB
   * eth_getLogs answer took ~3.8 ms of CPU per reply (78 % of the endpoint's profile on cache hits).
   */
  get bytes(): Buffer {
    return (this.encoded ??= Buffer.from(this.decoded!, 'utf8'));
  }

  get value(): unknown {
    if (!this.done) {
      this.parsed = JSON.parse(this.text);
      this.done = true;
    }
    return this.parsed;
  }

  toJSON(): unknown {
    return this.value;
  }

  /** `null` as the node wrote it (an unknown block or transaction). */
  get isNull(): boolean {
    return this.length === 4 && this.text === 'null';
  }
}

/** JSON's structural characters as char codes, for the scanners over raw text (here and raw-ids.ts). */
export const QUOTE = 34;
export const BACKSLASH = 92;
export const OPEN_OBJECT = 123;
export const CLOSE_OBJECT = 125;
export const OPEN_ARRAY = 91;
export const CLOSE_ARRAY = 93;
export const COMMA = 44;
export const COLON = 58;

/** JSON's insignificant whitespace: space, line feed, carriage return, tab. */
export const isSpace = (c: number) => c === 32 || c === 10 || c === 13 || c === 9;

function skipSpace(s: string, i: number, end = s.length): number {
  while (i < end && isSpace(s.charCodeAt(i))) i++;
  return i;
}

/** Index just past the string starting at the quote at `i`, or -1. indexOf jumps over hex payloads. */
function skipString(s: string, i: number): number {
  let j = i;
  for (;;) {
    j = s.indexOf('"', j + 1);
    if (j === -1) return -1;
    let slashes = 0;
    for (let k = j - 1; k > i && s.charCodeAt(k) === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return j + 1;
  }
}

/**
 * Index just past the JSON value starting at `i` (after white space), or -1 when the text is not well-formed at this
 * level: strings closed, brackets balanced and matched. Scalars are taken up to the next delimiter (the node wrote
 * them; we check structure, not every literal).
 */
function skipValue(s: string, i: number): number {
  i = skipSpace(s, i);
  if (i >= s.length) return -1;
  const c = s.charCodeAt(i);
  if (c === QUOTE) return skipString(s, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    const stack: number[] = [];
    while (i < s.length) {
      const ch = s.charCodeAt(i);
      if (ch === QUOTE) {
        i = skipString(s, i);
        if (i === -1) return -1;
        continue;
      }
      if (ch === OPEN_OBJECT || ch === OPEN_ARRAY) stack.push(ch);
      else if (ch === CLOSE_OBJECT || ch === CLOSE_ARRAY) {
        const open = stack.pop();
        if (open !== (ch === CLOSE_OBJECT ? OPEN_OBJECT : OPEN_ARRAY)) return -1;
        if (stack.length === 0) return i + 1;
      }
      i++;
    }
    return -1;
  }
  const start = i;
  while (i < s.length) {
    const ch = s.charCodeAt(i);
    if (ch === COMMA || ch === CLOSE_OBJECT || ch === CLOSE_ARRAY || isSpace(ch)) break;
    i++;
  }
  return i > start ? i : -1;
}

export interface ResponseParts {
  /** Source text of each member we care about; undefined when absent. */
  id?: string;
  result?: string;
  error?: string;
}

/**
 * Splits one JSON-RPC response object into the source text of its id, result and error members without parsing them.
 * `from`/`to` bound the object inside a larger text (a batch answer). Undefined when the text is not one well-formed
 * object.
 */
export function splitResponse(s: string, from = 0, to = s.length): ResponseParts | undefined {
  let i = skipSpace(s, from);
  if (s.charCodeAt(i) !== OPEN_OBJECT) return undefined;
  i = skipSpace(s, i + 1);
  const parts: ResponseParts = {};
  if (s.charCodeAt(i) === CLOSE_OBJECT) return skipSpace(s, i + 1, to) === to ? parts : undefined;
  for (;;) {
    if (s.charCodeAt(i) !== QUOTE) return undefined;
    const keyEnd = skipString(s, i);
    if (keyEnd === -1) return undefined;
    const rawKey = s.slice(i + 1, keyEnd - 1);
    const key = rawKey.includes('\\') ? (JSON.parse(s.slice(i, keyEnd)) as string) : rawKey;
    i = skipSpace(s, keyEnd);
    if (s.charCodeAt(i) !== COLON) return undefined;
    const valueStart = skipSpace(s, i + 1);
    const valueEnd = skipValue(s, valueStart);
    if (valueEnd === -1 || valueEnd > to) return undefined;
    if (key === 'id' || key === 'result' || key === 'error') parts[key] = s.slice(valueStart, valueEnd);
    i = skipSpace(s, valueEnd);
    const c = s.charCodeAt(i);
    if (c === COMMA) {
      i = skipSpace(s, i + 1);
      continue;
    }
    if (c !== CLOSE_OBJECT) return undefined;
    return skipSpace(s, i + 1, to) === to ? parts : undefined;
  }
}

/**
 * Walks the top-level array `s`, handing `each` the [start, end) of every element: the count of elements, or undefined
 * when `s` is not a well-formed array.
 */
function walkArray(s: string, each?: (start: number, end: number) => void): number | undefined {
  let i = skipSpace(s, 0);
  if (s.charCodeAt(i) !== OPEN_ARRAY) return undefined;
  i = skipSpace(s, i + 1);
  if (s.charCodeAt(i) === CLOSE_ARRAY) return skipSpace(s, i + 1) === s.length ? 0 : undefined;
  for (let n = 1; ; n++) {
    const start = skipSpace(s, i);
    const end = skipValue(s, start);
    if (end === -1) return undefined;
    each?.(start, end);
    i = skipSpace(s, end);
    const c = s.charCodeAt(i);
    if (c === COMMA) {
      i++;
      continue;
    }
    if (c !== CLOSE_ARRAY) return undefined;
    return skipSpace(s, i + 1) === s.length ? n : undefined;
  }
}

/** [start, end) of each element of the top-level array `s`; undefined when `s` is not a well-formed array. */
export function arrayElements(s: string): [number, number][] | undefined {
  const out: [number, number][] = [];
  return walkArray(s, (start, end) => out.push([start, end])) === undefined ? undefined : out;
}

/** Elements of a top-level array (eth_getLogs' result cap), or undefined when `s` is not an array. */
export const arrayLength = (s: string): number | undefined => walkArray(s);

/**
 * Whether the top-level array `s` has more than `cap` elements, cheaply: every element of an array of objects holds at
 * least one `}`, so counting that character (memchr speed) bounds the count from above; only when that bound is over
 * the cap are the elements counted exactly. Non-arrays: false.
 */
export function arrayLongerThan(raw: RawJson, cap: number): { over: boolean; count: number | undefined } {
  // A cached answer is checked again on every hit: the verdict is kept with it, per cap. The bound is counted on
  // whichever form the answer has (native indexOf either way), so one passed through is not decoded.
  const known = capChecks.get(raw);
  if (known?.cap === cap) return known.verdict;
  let bound = 0;
  const text = raw.decodedText;
  if (text !== undefined)
    for (let i = text.indexOf('}'); i !== -1 && bound <= cap; i = text.indexOf('}', i + 1)) bound++;
  else
    for (let b = raw.bytes, i = b.indexOf(CLOSE_OBJECT); i !== -1 && bound <= cap; i = b.indexOf(CLOSE_OBJECT, i + 1))
      bound++;
  const head = raw.head(64);
  let verdict: { over: boolean; count: number | undefined };
  if (bound <= cap && head.charCodeAt(skipSpace(head, 0)) === OPEN_ARRAY && !/^\s*\[\s*[^\s{\]]/.test(head))
    verdict = { over: false, count: undefined };
  else {
    const count = arrayLength(raw.text);
    verdict = { over: count !== undefined && count > cap, count };
  }
  capChecks.set(raw, { cap, verdict });
  return verdict;
}
const capChecks = new WeakMap<RawJson, { cap: number; verdict: { over: boolean; count: number | undefined } }>();

/**
 * The fast shape of a node's answer: `{"jsonrpc":"2.0","id":<number>,"result":` … `}` (how geth, reth and anvil write
 * it). For such a body the result is the text in between, found without reading it; the node's own framing is trusted,
 * as any HTTP proxy trusts it. Other shapes go through splitResponse.
 */
const FAST_PREFIX = /^\{"jsonrpc":"2\.0","id":(\d{1,15}),"result":/;

/**
 * Where the result of a fast-shape answer lies in `body` (a node's text, or its ASCII bytes: a char code is a byte),
 * [start, end), and its id; undefined for any other shape. `head`: the body's start, the prefix at least.
 */
function fastCut(body: string | Buffer, head: string): { id: string; start: number; end: number } | undefined {
  if (body.length < 256) return undefined; // small answers: the full check costs nothing
  const m = FAST_PREFIX.exec(head);
  if (!m) return undefined;
  const at = typeof body === 'string' ? (i: number) => body.charCodeAt(i) : (i: number) => body[i]!;
  let end = body.length - 1;
  while (end > 0 && isSpace(at(end))) end--;
  if (at(end) !== CLOSE_OBJECT) return undefined;
  const start = m[0].length;
  const first = at(start);
  const last = at(end - 1);
  // The value must open and close as one container of the same kind, and an "error" member anywhere sends an object
  // result to the full check (a node that wrote both; also trace frames, which carry "error"). An array result needs no
  // scan: an error member after it would end the text with its own object's `}`, not with the array's `]` (and the
  // prefix puts result first), so it is refused above; that scan of a 600 KB eth_getLogs answer cost ~0.4 ms.
  if (!((first === OPEN_ARRAY && last === CLOSE_ARRAY) || (first === OPEN_OBJECT && last === CLOSE_OBJECT)))
    return undefined;
  if (first === OPEN_OBJECT && body.indexOf('"error"', start) !== -1) return undefined;
  return { id: m[1]!, start, end };
}

/**
 * fastResult on a node's ASCII body as bytes: the result as a view of them, nothing decoded but the prefix. Undefined
 * where fastResult would be (the caller then decodes and takes the full path).
 */
export function fastResultOfAscii(body: Buffer): { id: string; result: Buffer } | undefined {
  const cut = fastCut(body, body.toString('latin1', 0, 64));
  return cut && { id: cut.id, result: body.subarray(cut.start, cut.end) };
}

export function fastResult(s: string): { id: string; result: string } | undefined {
  const cut = fastCut(s, s);
  return cut && { id: cut.id, result: s.slice(cut.start, cut.end) };
}
