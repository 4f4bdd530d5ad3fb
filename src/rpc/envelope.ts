import { RpcCodes, type WireError } from './errors.js';
import { andThen, type Awaitable, type CallResult, type CallTarget } from './types.js';
import type { ResponseBudget } from './response-budget.js';
import { scanBody } from './raw-ids.js';
import type { RateDecision, RateLimiter } from './ratelimit.js';
import { depthMessage, valueDepth } from './json-depth.js';
import { LARGE_ANSWER_CHARS, RawJson } from './upstream/raw-json.js';
import type { ClientQuota } from '../common/http/client-quota.js';

/**
 * One encoded reply: a string, or chunks of bytes when it carries a large answer of a node (see encode),
 * written one after the other: joining them would allocate and copy the whole answer for every reply.
 */
export type Reply = string | Buffer[];

export interface HttpAnswer {
  status: number;
  /** undefined: nothing to send (only notifications). */
  body: Reply | undefined;
  headers?: Record<string, string>;
}

type Id = string | number | null;

const isId = (v: unknown): v is Id =>
  v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/** The id as it goes back: a number as written in the body (raw-ids.ts), anything else as JSON. */
const idTextOf = (id: Id, raw: string | undefined): string =>
  typeof id === 'number' && raw !== undefined ? raw : JSON.stringify(id);

// Built by hand so the id is echoed as written (see raw-ids.ts).
const encodeError = (idText: string, error: WireError): string =>
  `{"jsonrpc":"2.0","id":${idText},"error":${JSON.stringify(error)}}`;

const CLOSE = Buffer.from('}');

function encode(idText: string, out: CallResult | { error: WireError }): Reply {
  if ('error' in out) return encodeError(idText, out.error);
  // A pass-through answer is the node's own text (RawJson): only the client's id is put in. A large one is
  // spliced as bytes around its UTF-8 (encoded once per answer, so once for every hit of a cached one).
  if (out.result instanceof RawJson) {
    if (out.result.length > LARGE_ANSWER_CHARS)
      return [Buffer.from(`{"jsonrpc":"2.0","id":${idText},"result":`), out.result.bytes, CLOSE];
    return `{"jsonrpc":"2.0","id":${idText},"result":${out.result.text}}`;
  }
  return `{"jsonrpc":"2.0","id":${idText},"result":${JSON.stringify(out.result)}}`;
}

/** A batch's replies as one JSON array, in order; chunks when any reply is chunks. */
function joinReplies(replies: Reply[]): Reply {
  if (replies.every((r) => typeof r === 'string')) return `[${replies.join(',')}]`;
  const parts: Buffer[] = [Buffer.from('[')];
  for (const [i, r] of replies.entries()) {
    if (i > 0) parts.push(Buffer.from(','));
    if (typeof r === 'string') parts.push(Buffer.from(r));
    else parts.push(...r);
  }
  parts.push(Buffer.from(']'));
  return parts;
}

/** A reply as one string (a WebSocket text frame, tests). */
export const replyText = (r: Reply): string => (typeof r === 'string' ? r : Buffer.concat(r).toString('utf8'));

export const errorBody = (code: number, message: string, data?: unknown): string =>
  encodeError('null', data === undefined ? { code, message } : { code, message, data });

interface Entry {
  /** The id as it goes back on the wire, or undefined for a notification. */
  idText: string | undefined;
  call?: { method: string; params: unknown };
  invalid?: string;
  invalidData?: unknown;
  /** Refused before dispatch with this error (params nested too deep). */
  refused?: WireError;
}

function inspect(item: unknown, raw: string | undefined): Entry {
  if (item === null || typeof item !== 'object' || Array.isArray(item))
    return { idText: 'null', invalid: 'a request must be a JSON object' };
  const o = item as Record<string, unknown>;
  const hasId = 'id' in o;
  const idOk = hasId && isId(o.id);
  const idText = !hasId ? undefined : idOk ? idTextOf(o.id as Id, raw) : 'null';
  if (hasId && !idOk) return { idText: 'null', invalid: 'id must be a string, a number or null' };
  if (o.jsonrpc !== '2.0') return { idText: idText ?? 'null', invalid: 'jsonrpc must be exactly "2.0"' };
  if (typeof o.method !== 'string' || o.method.length === 0)
    return { idText: idText ?? 'null', invalid: 'method must be a non-empty string' };
  if ('params' in o && (o.params === null || typeof o.params !== 'object'))
    return { idText: idText ?? 'null', invalid: 'params must be an array or an object when present' };
  return { idText, call: { method: o.method, params: o.params } };
}

/** Over RPC_MAX_JSON_DEPTH: which member is too deep decides the code (see json-depth.ts). */
function inspectDeep(item: unknown, raw: string | undefined, base: number, limit: number): Entry | undefined {
  if (base + valueDepth(item) <= limit) return undefined;
  const data = { cap: 'RPC_MAX_JSON_DEPTH', limit };
  if (item === null || typeof item !== 'object' || Array.isArray(item))
    return { idText: 'null', invalid: depthMessage('the request', limit), invalidData: data };
  const o = item as Record<string, unknown>;
  const deep = Object.keys(o).filter((k) => base + 1 + valueDepth(o[k]) > limit);
  if (deep.length === 1 && deep[0] === 'params') {
    // The envelope around the params is judged as usual: an invalid one is -32600 before params matter.
    const shallow = inspect({ ...o, params: [] }, raw);
    if (shallow.invalid !== undefined) return shallow;
    const method = String(o.method);
    return {
      idText: shallow.idText,
      refused: {
        code: RpcCodes.InvalidParams,
        message: `invalid params: ${depthMessage(`params of ${method}`, limit)}`,
        data,
      },
    };
  }
  const idText = 'id' in o && isId(o.id) ? idTextOf(o.id, raw) : 'null';
  return {
    idText,
    invalid: depthMessage(`member "${deep.find((k) => k !== 'params') ?? 'params'}"`, limit),
    invalidData: data,
  };
}

export interface EnvelopeOptions {
  maxBatch: number;
  /** RPC_MAX_JSON_DEPTH (default 64): deepest nesting of [ and { a body may have. */
  maxJsonDepth?: number;
  /** The rate limiter's client identity, handed to every call (live-filter caps count per client). */
  client?: string;
  /** The byte budget of this reply (response-budget.ts). */
  budget?: ResponseBudget;
  /**
   * Takes each call's unit from the client's bucket (of `client`, '' without one); a refusal carries the seconds to
   * wait. A memory bucket answers now.
   */
  limiter: Pick<RateLimiter, 'take'>;
  /**
   * RPC_MAX_INFLIGHT_PER_CLIENT: calls of `client` running at once, over HTTP and WebSocket together (a batch
   * counts its calls, at most the whole quota, so it can always run alone); past it HTTP 429, -32005.
   */
  inflight?: ClientQuota;
}

/**
 * JSON-RPC 2.0 envelope handling for one HTTP body: parse errors, invalid requests, notifications,
 * ordered batches and the batch limit are decided here, before any method runs. HTTP status is 200 for
 * every JSON-RPC answer except rate limiting (429); 204 when only notifications were sent. A single call
 * answered without waiting (the head, a cache hit) is answered now, not through a promise (types.ts, Awaitable).
 */
export function handleBody(text: string, dispatcher: CallTarget, options: EnvelopeOptions): Awaitable<HttpAnswer> {
  // Measured on the raw text before anything walks the value (JSON.parse does not recurse; what follows does),
  // in the one pass that also keeps the numeric ids as written.
  const maxDepth = options.maxJsonDepth ?? 64;
  const scan = scanBody(text);
  const tooDeep = scan.depth > maxDepth;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return {
      status: 200,
      body: errorBody(RpcCodes.ParseError, `parse error: the body is not valid JSON (${(err as Error).message})`),
    };
  }
  const batch = Array.isArray(parsed);
  if (!batch) return handleSingle(scan.numericIds[0], parsed, tooDeep, maxDepth, dispatcher, options);
  return handleBatch(parsed as unknown[], scan.numericIds, tooDeep, maxDepth, dispatcher, options);
}

async function handleBatch(
  items: unknown[],
  raws: (string | undefined)[],
  tooDeep: boolean,
  maxDepth: number,
  dispatcher: CallTarget,
  options: EnvelopeOptions,
): Promise<HttpAnswer> {
  if (items.length === 0)
    return { status: 200, body: errorBody(RpcCodes.InvalidRequest, 'invalid request: empty batch') };
  if (items.length > options.maxBatch) {
    return {
      status: 200,
      body: errorBody(
        RpcCodes.InvalidRequest,
        `invalid request: a batch may hold at most ${options.maxBatch} calls (RPC_MAX_BATCH), this one has ${items.length}`,
        { limit: options.maxBatch, received: items.length },
      ),
    };
  }
  const entries = items.map(
    (it, i) => (tooDeep ? inspectDeep(it, raws[i], 1, maxDepth) : undefined) ?? inspect(it, raws[i]),
  );

  // Every call of the batch refused with `error` (a notification gets no answer, as ever).
  const refuseAll = (error: WireError, retryAfterSeconds: number) => {
    const answers = entries.filter((e) => e.idText !== undefined).map((e) => encodeError(e.idText!, error));
    return tooMany(`[${answers.join(',')}]`, retryAfterSeconds);
  };
  const decision = await options.limiter.take(options.client ?? '', items.length);
  if (!decision.ok) return refuseAll(rateLimitError(decision), decision.retryAfterSeconds);

  const held = Math.min(items.length, options.inflight?.perClient || items.length);
  if (options.inflight && !options.inflight.take(options.client ?? '', held))
    return refuseAll(inflightError(options.inflight.perClient), 1);
  let answers: (Reply | undefined)[];
  try {
    answers = await Promise.all(entries.map((e) => answer(e, dispatcher, options)));
  } finally {
    options.inflight?.release(options.client ?? '', held);
  }
  const replies = answers.filter((a): a is Reply => a !== undefined);
  if (replies.length === 0) return { status: 204, body: undefined };
  return { status: 200, body: joinReplies(replies) };
}

/**
 * One call that is not a batch (nearly every request): the same steps as a batch of one, without the
 * arrays, the Promise.all and the join a batch needs.
 */
function handleSingle(
  raw: string | undefined,
  item: unknown,
  tooDeep: boolean,
  maxDepth: number,
  dispatcher: CallTarget,
  options: EnvelopeOptions,
): Awaitable<HttpAnswer> {
  const entry = (tooDeep ? inspectDeep(item, raw, 0, maxDepth) : undefined) ?? inspect(item, raw);
  return andThen(options.limiter.take(options.client ?? '', 1), (decision) => {
    const idText = entry.idText ?? 'null';
    if (!decision.ok) return tooMany(encodeError(idText, rateLimitError(decision)), decision.retryAfterSeconds);
    const quota = options.inflight;
    if (quota === undefined) return andThen(answer(entry, dispatcher, options), singleAnswer);
    const client = options.client ?? '';
    if (!quota.take(client)) return tooMany(encodeError(idText, inflightError(quota.perClient)), 1);
    return andThen(
      holding(
        () => answer(entry, dispatcher, options),
        () => quota.release(client),
      ),
      singleAnswer,
    );
  });
}

/** Runs `run`, then `release` once what it answered has settled (now, for an answer given without waiting). */
function holding<T>(run: () => Awaitable<T>, release: () => void): Awaitable<T> {
  let out: Awaitable<T>;
  try {
    out = run();
  } catch (err) {
    release();
    throw err;
  }
  if (out instanceof Promise) return out.finally(release);
  release();
  return out;
}

function inflightError(perClient: number): WireError {
  return {
    code: RpcCodes.LimitExceeded,
    message: `too many calls in flight: at most ${perClient} of one client at once, over HTTP and WebSocket together (RPC_MAX_INFLIGHT_PER_CLIENT); wait for an answer, then retry`,
    data: { cap: 'RPC_MAX_INFLIGHT_PER_CLIENT', limit: perClient, retryAfterSeconds: 1 },
  };
}

/** HTTP 429 with the refusal's body and when to retry. */
const tooMany = (body: string, retryAfterSeconds: number): HttpAnswer => ({
  status: 429,
  body,
  headers: { 'retry-after': String(retryAfterSeconds) },
});

const singleAnswer = (reply: Reply | undefined): HttpAnswer =>
  reply === undefined ? { status: 204, body: undefined } : { status: 200, body: reply };

function rateLimitError(decision: Extract<RateDecision, { ok: false }>): WireError {
  return {
    code: RpcCodes.LimitExceeded,
    message: `rate limit exceeded: ${decision.limitPerSecond} units per second per client (RPC_RATE_LIMIT_PER_SECOND, burst ${decision.burst}); every call of a batch costs 1 unit and its answer 1 more per RPC_RATE_LIMIT_BYTES_PER_UNIT bytes and per RPC_RATE_LIMIT_MS_PER_UNIT ms the node spent executing it; retry after ${decision.retryAfterSeconds} s`,
    data: {
      retryAfterSeconds: decision.retryAfterSeconds,
      limitPerSecond: decision.limitPerSecond,
      burst: decision.burst,
    },
  };
}

/** The encoded answer to one entry; undefined for a notification. */
function answer(e: Entry, dispatcher: CallTarget, options: EnvelopeOptions): Awaitable<Reply | undefined> {
  if (e.invalid !== undefined) {
    const error: WireError = { code: RpcCodes.InvalidRequest, message: `invalid request: ${e.invalid}` };
    if (e.invalidData !== undefined) error.data = e.invalidData;
    return encodeError(e.idText ?? 'null', error);
  }
  if (e.refused !== undefined) return e.idText === undefined ? undefined : encodeError(e.idText, e.refused);
  const idText = e.idText;
  return andThen(
    dispatcher.call(e.call!.method, e.call!.params, { client: options.client, budget: options.budget }),
    (out) => (idText === undefined ? undefined : encode(idText, out)),
  );
}
