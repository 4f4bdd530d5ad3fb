import http from 'node:http';
import https from 'node:https';
import { UpstreamTransportError } from '../errors.js';
import { Body, post, SMALL_BODY_BYTES, UpstreamOversizeError, type NodeEndpoint } from './http-post.js';
import { arrayElements, fastResult, fastResultOfAscii, RawJson, splitResponse } from './raw-json.js';

/** One JSON-RPC response of the node: its id as written, and its result or its error. */
export class UpstreamResponse {
  error?: { code: number; message: string; data?: unknown };
  constructor(
    readonly id: string | undefined,
    /** The result exactly as the node wrote it (never parsed unless someone reads `.value`). */
    readonly raw?: RawJson,
  ) {}
}

/**
 * One response object of `text` (between `from` and `to`): the result kept as source text, the error
 * parsed (small, and its code decides failover). Undefined when it is not a JSON-RPC response.
 */
export function readResponse(text: string, from = 0, to = text.length): UpstreamResponse | undefined {
  const fast = from === 0 && to === text.length ? fastResult(text) : undefined;
  if (fast) return new UpstreamResponse(fast.id, new RawJson(fast.result));
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
  const out = new UpstreamResponse(parts.id, error ? undefined : new RawJson(parts.result!));
  if (error) out.error = error;
  return out;
}

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
 * One answer: an ASCII body of the fast shape (how geth, reth and anvil write) is cut on its bytes and its
 * result kept as a view of them (RawJson.ofAscii): a 600 KB eth_getLogs answer then costs no decoding
 * (2.7 ms here) and no encoding on its way out. Anything else is decoded and read as text.
 */
function readBody(body: Body): UpstreamResponse | undefined {
  if (body.ascii) {
    const fast = fastResultOfAscii(body.bytes);
    if (fast) return new UpstreamResponse(fast.id, RawJson.ofAscii(fast.result));
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
 * Minimal JSON-RPC-over-HTTP client with keep-alive sockets. It tells apart failures where the request
 * surely did not reach the node (connection refused before anything was written) from ambiguous ones
 * (written, then timeout, reset or a 5xx): the pool resends only the former for writes. It also tells
 * apart the node's faults from ours: a body the node would not take, or an answer over our budget, is an
 * UpstreamOversizeError, which says nothing about the node's health.
 */
export class JsonRpcHttpClient {
  private readonly node: NodeEndpoint;
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
    this.limits = { ...DEFAULT_CLIENT_LIMITS, ...limits };
    const { maxSockets, maxResponseBytes } = this.limits;
    const target = new URL(url);
    const Agent = target.protocol === 'https:' ? https.Agent : http.Agent;
    const agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: Math.min(64, maxSockets) });
    this.node = { url: target, agent, maxResponseBytes };
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
      const text = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params });
      return this.exchange(method, text, options.timeoutMs ?? this.timeoutMs, options.batch !== false);
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
      ({ text } = await post(this.node, body, this.timeoutMs, true));
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

  private async exchange(
    method: string,
    body: string,
    timeoutMs: number,
    idempotent: boolean,
  ): Promise<UpstreamResponse> {
    const r = readBody(await post(this.node, body, timeoutMs, idempotent));
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

  close(): void {
    this.node.agent.destroy();
  }
}
