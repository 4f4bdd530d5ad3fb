import { isAscii } from 'node:buffer';
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { UpstreamTransportError } from '../errors.js';
import { arrayElements, fastResult, fastResultOfAscii, RawJson, splitResponse } from './raw-json.js';

export interface UpstreamResponse {
  /** The result exactly as the node wrote it (never parsed unless someone reads `.value`). */
  raw?: RawJson;
  /** The result parsed, on first read (for callers that look inside, e.g. bundler.ts). */
  readonly result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

class Response implements UpstreamResponse {
  raw?: RawJson;
  error?: { code: number; message: string; data?: unknown };
  constructor(readonly id: string | undefined) {}
  get result(): unknown {
    return this.raw?.value;
  }
}

/**
 * One response object of `text` (between `from` and `to`): the result kept as source text, the error
 * parsed (small, and its code decides failover). Undefined when it is not a JSON-RPC response.
 */
export function readResponse(
  text: string,
  from = 0,
  to = text.length,
): (UpstreamResponse & { id?: string }) | undefined {
  if (from === 0 && to === text.length) {
    const fast = fastResult(text);
    if (fast) {
      const out = new Response(fast.id);
      out.raw = new RawJson(fast.result);
      return out;
    }
  }
  const parts = splitResponse(text, from, to);
  if (!parts || (parts.result === undefined && parts.error === undefined)) return undefined;
  let error: UpstreamResponse['error'];
  if (parts.error !== undefined) {
    try {
      const e = JSON.parse(parts.error) as unknown;
      if (e !== null) {
        if (typeof e !== 'object') return undefined;
        error = e as UpstreamResponse['error'];
      }
    } catch {
      return undefined;
    }
  }
  if (!error && parts.result === undefined) return undefined;
  const out = new Response(parts.id);
  if (error) out.error = error;
  else out.raw = new RawJson(parts.result!);
  return out;
}

/**
 * Minimal JSON-RPC-over-HTTP client with keep-alive sockets. It tells apart failures where the request
 * surely did not reach the node (connection refused before anything was written) from ambiguous ones
 * (written, then timeout, reset or a 5xx): the pool resends only the former for writes. It also tells
 * apart the node's faults from ours: a body the node would not take, or an answer over our budget, is an
 * UpstreamOversizeError, which says nothing about the node's health.
 */
interface Pending {
  method: string;
  /** The call as it goes on the wire, id included: serialized once, measured for the byte budget. */
  text: string;
  id: number;
  resolve(r: UpstreamResponse): void;
  reject(err: unknown): void;
}

export interface ClientLimits {
  /** RPC_UPSTREAM_MAX_BATCH_BYTES: a merged batch stays under this; a bigger single call goes alone. */
  maxBatchBytes: number;
  /** RPC_MAX_RESPONSE_BYTES: an upstream answer is not read past this (a batch is then resent split). */
  maxResponseBytes: number;
  /** RPC_UPSTREAM_MAX_SOCKETS: connections to this node at most (more requests wait for a free one). */
  maxSockets: number;
}

/**
 * A node's answer as it came. Node answers are ASCII (hex, JSON punctuation): decoded as latin1 that is a
 * plain copy into a one-byte string; anything else is decoded as UTF-8.
 */
class Body {
  readonly ascii: boolean;
  private decoded: string | undefined;
  constructor(readonly bytes: Buffer) {
    this.ascii = isAscii(bytes);
  }

  /** Decoded on first read (an ASCII answer of the fast shape never is: see readBody). */
  get text(): string {
    return (this.decoded ??= this.ascii ? this.bytes.toString('latin1') : this.bytes.toString('utf8'));
  }
}

/**
 * One answer: an ASCII body of the fast shape (how geth, reth and anvil write) is cut on its bytes and its
 * result kept as a view of them (RawJson.ofAscii): a 600 KB eth_getLogs answer then costs no decoding
 * (2.7 ms here) and no encoding on its way out. Anything else is decoded and read as text.
 */
function readBody(body: Body): (UpstreamResponse & { id?: string }) | undefined {
  if (body.ascii) {
    const fast = fastResultOfAscii(body.bytes);
    if (fast) {
      const out = new Response(fast.id);
      out.raw = RawJson.ofAscii(fast.result);
      return out;
    }
  }
  return readResponse(body.text);
}

export const DEFAULT_CLIENT_LIMITS: ClientLimits = {
  maxBatchBytes: 524_288,
  maxResponseBytes: 10_485_760,
  maxSockets: 128,
};

/** Largest JSON-RPC batch sent upstream (nodes commonly cap batches at 100 or more). */
const MAX_UPSTREAM_BATCH = 50;
/**
 * A request body up to this size is never suspected of being refused for its size, so its failure is the
 * node's. Past it, a connection closed while the node was still receiving usually means a body limit
 * (anvil closes at ~2 MiB, proxies at their own limit) and must not mark the node down for everyone.
 */
export const SMALL_BODY_BYTES = 65_536;

/** A request the node would not take for its size, or an answer larger than our budget: not a node fault. */
export class UpstreamOversizeError extends UpstreamTransportError {
  override name = 'UpstreamOversizeError';
  constructor(
    message: string,
    readonly kind: 'request' | 'response',
    readonly bytes: number,
    options: { cause?: unknown } = {},
  ) {
    super(message, false, options);
  }
}

/**
 * What an error of one HTTP request to the node means: send it once more (`resend`: a read on a reused
 * keep-alive socket that the node had already closed, a race of ours), a body too large for the node (it
 * cut the connection while receiving a large one), or a transport failure, ambiguous once the body was sent
 * (a write may have reached the node) unless the node could not be reached at all.
 */
function requestFailure(
  err: NodeJS.ErrnoException,
  at: { responded: boolean; written: boolean; bytes: number; resend: boolean },
): UpstreamTransportError | 'resend' {
  const code = err.code ?? err.message;
  const refused = code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH';
  const cut = code === 'ECONNRESET' || code === 'EPIPE';
  if (cut && !at.responded && at.resend) return 'resend';
  if (cut && !at.responded && at.bytes > SMALL_BODY_BYTES) {
    return new UpstreamOversizeError(
      `the node closed the connection while receiving a ${at.bytes}-byte request (${code}); it may not accept requests this large`,
      'request',
      at.bytes,
      { cause: err },
    );
  }
  return new UpstreamTransportError(`upstream connection failed: ${code}`, at.written && !refused, { cause: err });
}

/**
 * The node did not answer within the time given: the request was sent, so a write is ambiguous. A compute
 * call (pool.ts `compute`) that times out says nothing about the node's health (the call was expensive).
 */
export class UpstreamTimeoutError extends UpstreamTransportError {
  override name = 'UpstreamTimeoutError';
}

// A socket that errors while no request owns it (between requests, or after the node answered before
// reading our whole body) would otherwise raise an uncaught 'error' and end the process (`write EPIPE`).
const guarded = new WeakSet<Socket>();
const guard = (socket: Socket) => {
  if (guarded.has(socket)) return;
  guarded.add(socket);
  socket.on('error', () => undefined);
};

export class JsonRpcHttpClient {
  private readonly agent: http.Agent;
  private readonly url: URL;
  private readonly limits: ClientLimits;
  private nextId = 1;
  private queue: Pending[] = [];
  private scheduled = false;
  /** Cleared when the node answers a small batch with something else than an array. */
  private batching = true;

  constructor(
    url: string,
    private readonly timeoutMs: number,
    limits: Partial<ClientLimits> = {},
  ) {
    this.url = new URL(url);
    this.limits = { ...DEFAULT_CLIENT_LIMITS, ...limits };
    const Agent = this.url.protocol === 'https:' ? https.Agent : http.Agent;
    this.agent = new Agent({
      keepAlive: true,
      maxSockets: this.limits.maxSockets,
      maxFreeSockets: Math.min(64, this.limits.maxSockets),
    });
  }

  /**
   * Reads issued in the same event-loop turn are sent as JSON-RPC batches of at most 50 calls and
   * RPC_UPSTREAM_MAX_BATCH_BYTES (fewer HTTP round trips under load, a single request when alone);
   * `batch: false` (writes) always goes alone, and so does a read with `alone` (answers that may be large:
   * alone, its answer is recognized in constant time, while a batch answer must be scanned to be cut).
   */
  call(
    method: string,
    params: readonly unknown[],
    options: { timeoutMs?: number; batch?: boolean; alone?: boolean } = {},
  ): Promise<UpstreamResponse> {
    if (options.batch === false || options.alone || !this.batching || options.timeoutMs !== undefined) {
      return this.single(method, params, options.timeoutMs ?? this.timeoutMs, options.batch !== false);
    }
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.queue.push({ method, id, text: JSON.stringify({ jsonrpc: '2.0', id, method, params }), resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const queued = this.queue;
    this.queue = [];
    let group: Pending[] = [];
    let bytes = 2;
    for (const p of queued) {
      const size = Buffer.byteLength(p.text) + 1;
      if (group.length > 0 && (group.length >= MAX_UPSTREAM_BATCH || bytes + size > this.limits.maxBatchBytes)) {
        this.send(group);
        group = [];
        bytes = 2;
      }
      group.push(p);
      bytes += size;
    }
    if (group.length > 0) this.send(group);
  }

  private send(group: Pending[]): void {
    if (group.length === 1) {
      const p = group[0]!;
      this.exchange(p.method, p.text, this.timeoutMs, true).then(p.resolve, p.reject);
    } else {
      void this.sendBatch(group);
    }
  }

  /** Reads only, so sending a part again is safe: halves are sent on their own, down to single calls. */
  private split(group: Pending[]): void {
    const half = Math.ceil(group.length / 2);
    this.send(group.slice(0, half));
    this.send(group.slice(half));
  }

  private async sendBatch(group: Pending[]): Promise<void> {
    const body = `[${group.map((p) => p.text).join(',')}]`;
    let text: string;
    try {
      ({ text } = await this.post(body, this.timeoutMs, true));
    } catch (err) {
      if (err instanceof UpstreamOversizeError) {
        this.split(group);
        return;
      }
      const e =
        err instanceof UpstreamTransportError
          ? err
          : new UpstreamTransportError(`upstream batch failed: ${(err as Error).message}`, true);
      for (const p of group) p.reject(e);
      return;
    }
    // The answer is cut into its elements by structure only: each result stays the node's text.
    const elements = arrayElements(text);
    if (!elements) {
      if (!splitResponse(text)) {
        const e = new UpstreamTransportError('upstream answered a batch with a body that is not JSON', true);
        for (const p of group) p.reject(e);
        return;
      }
      // A big batch answered with one error object (anvil: "Invalid request" past its body limit) was
      // refused for its size; a small one means the node does not batch: one request per call from now on.
      if (Buffer.byteLength(body) <= SMALL_BODY_BYTES) this.batching = false;
      this.split(group);
      return;
    }
    const byId = new Map<string, UpstreamResponse>();
    for (const [start, end] of elements) {
      const r = readResponse(text, start, end);
      if (r?.id !== undefined) byId.set(r.id, r);
    }
    for (const p of group) {
      const r = byId.get(String(p.id));
      if (r) p.resolve(r);
      else p.reject(new UpstreamTransportError(`upstream left ${p.method} out of its batch answer`, true));
    }
  }

  private single(
    method: string,
    params: readonly unknown[],
    timeoutMs: number,
    idempotent: boolean,
  ): Promise<UpstreamResponse> {
    return this.exchange(
      method,
      JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params }),
      timeoutMs,
      idempotent,
    );
  }

  private async exchange(
    method: string,
    body: string,
    timeoutMs: number,
    idempotent: boolean,
  ): Promise<UpstreamResponse> {
    const r = readBody(await this.post(body, timeoutMs, idempotent));
    if (!r) {
      throw new UpstreamTransportError(`upstream answered ${method} with a body that is not a JSON-RPC response`, true);
    }
    const bytes = Buffer.byteLength(body);
    if (r.error && r.id === 'null' && bytes > SMALL_BODY_BYTES) {
      // Not an answer to our call (id null): the node refused the body before reading it (anvil past ~2 MiB).
      throw new UpstreamOversizeError(
        `the node refused a ${bytes}-byte request (${r.error.message}); it is larger than the node accepts`,
        'request',
        bytes,
      );
    }
    return r;
  }

  /**
   * One HTTP exchange. Reads (`idempotent`) on a reused keep-alive socket that the node had already
   * closed are sent once more on a fresh connection: that race is ours, not a node failure.
   */
  private post(body: string, timeoutMs: number, idempotent: boolean, retried = false): Promise<Body> {
    const lib = this.url.protocol === 'https:' ? https : http;
    const bytes = Buffer.byteLength(body);
    const max = this.limits.maxResponseBytes;
    return new Promise((resolve, reject) => {
      let written = false;
      let responded = false;
      let settled = false;
      const settle = () => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        return true;
      };
      const fail = (err: UpstreamTransportError) => {
        if (!settle()) return;
        req.destroy();
        reject(err);
      };
      const req = lib.request(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          headers: { 'content-type': 'application/json', 'content-length': bytes, accept: 'application/json' },
        },
        (res) => {
          responded = true;
          const status = res.statusCode ?? 0;
          if (status === 413) {
            fail(
              new UpstreamOversizeError(
                `the node refused a ${bytes}-byte request as too large (HTTP 413)`,
                'request',
                bytes,
              ),
            );
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > max) {
              fail(
                new UpstreamOversizeError(
                  `the answer is larger than ${max} bytes (RPC_MAX_RESPONSE_BYTES)`,
                  'response',
                  size,
                ),
              );
              return;
            }
            if (!settled) chunks.push(c);
          });
          res.on('error', (err) =>
            fail(new UpstreamTransportError(`upstream response broke off: ${err.message}`, true, { cause: err })),
          );
          res.on('end', () => {
            if (settled) return;
            // Answered before it read our whole body: the connection is in an unknown state, never reuse it.
            if (!written) req.destroy();
            const answer = new Body(Buffer.concat(chunks));
            // Nodes answer JSON-RPC errors with 200 (geth) or 4xx/5xx (some proxies): a JSON-RPC body wins.
            if (status !== 200 && !/^\s*[{[]/.test(answer.bytes.toString('latin1', 0, 64))) {
              fail(new UpstreamTransportError(`upstream answered HTTP ${status}`, status >= 500 || status === 0));
              return;
            }
            settle();
            resolve(answer);
          });
        },
      );
      req.on('socket', guard);
      const timer = setTimeout(
        () => fail(new UpstreamTimeoutError(`upstream did not answer within ${timeoutMs} ms`, written)),
        timeoutMs,
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (settled) return;
        const failure = requestFailure(err, {
          responded,
          written,
          bytes,
          resend: idempotent && !retried && req.reusedSocket,
        });
        if (failure !== 'resend') return fail(failure);
        settle();
        this.post(body, timeoutMs, idempotent, true).then(resolve, reject);
      });
      req.end(body, () => {
        written = true;
      });
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
