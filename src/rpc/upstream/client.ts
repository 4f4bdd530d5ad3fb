import http from 'node:http';
import https from 'node:https';
import { UpstreamTransportError } from '../errors.js';

export interface UpstreamResponse {
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * Minimal JSON-RPC-over-HTTP client with keep-alive sockets. It tells apart failures where the request
 * surely did not reach the node (connection refused before anything was written) from ambiguous ones
 * (written, then timeout, reset or a 5xx): the pool resends only the former for writes.
 */
interface Pending {
  method: string;
  params: readonly unknown[];
  resolve(r: UpstreamResponse): void;
  reject(err: unknown): void;
}

/** Largest JSON-RPC batch sent upstream (nodes commonly cap batches at 100 or more). */
const MAX_UPSTREAM_BATCH = 50;

export class JsonRpcHttpClient {
  private readonly agent: http.Agent;
  private readonly url: URL;
  private nextId = 1;
  private queue: Pending[] = [];
  private scheduled = false;
  /** Cleared when the node answers a batch with something else than an array. */
  private batching = true;

  constructor(url: string, private readonly timeoutMs: number) {
    this.url = new URL(url);
    const Agent = this.url.protocol === 'https:' ? https.Agent : http.Agent;
    this.agent = new Agent({ keepAlive: true, maxSockets: 128, maxFreeSockets: 64 });
  }

  /**
   * Reads issued in the same event-loop turn are sent as one JSON-RPC batch (fewer HTTP round trips under
   * load, a single request when alone); `batch: false` (writes) always goes alone.
   */
  call(method: string, params: readonly unknown[], options: { timeoutMs?: number; batch?: boolean } = {}): Promise<UpstreamResponse> {
    if (options.batch === false || !this.batching || options.timeoutMs !== undefined) return this.single(method, params, options.timeoutMs ?? this.timeoutMs);
    return new Promise((resolve, reject) => {
      this.queue.push({ method, params, resolve, reject });
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
    for (let i = 0; i < queued.length; i += MAX_UPSTREAM_BATCH) {
      const group = queued.slice(i, i + MAX_UPSTREAM_BATCH);
      if (group.length === 1) {
        const [p] = group;
        this.single(p!.method, p!.params, this.timeoutMs).then(p!.resolve, p!.reject);
      } else {
        void this.sendBatch(group);
      }
    }
  }

  private async sendBatch(group: Pending[]): Promise<void> {
    const ids = group.map(() => this.nextId++);
    const body = `[${group.map((p, i) => JSON.stringify({ jsonrpc: '2.0', id: ids[i], method: p.method, params: p.params })).join(',')}]`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(await this.post(body, this.timeoutMs));
    } catch (err) {
      const e = err instanceof UpstreamTransportError ? err : new UpstreamTransportError('upstream answered a batch with a body that is not JSON', true);
      for (const p of group) p.reject(e);
      return;
    }
    if (!Array.isArray(parsed)) {
      // No batch support: from now on one request per call; these are reads, so sending them again is safe.
      this.batching = false;
      for (const p of group) this.single(p.method, p.params, this.timeoutMs).then(p.resolve, p.reject);
      return;
    }
    const byId = new Map<unknown, UpstreamResponse>();
    for (const r of parsed as (UpstreamResponse & { id?: unknown })[]) if (r && typeof r === 'object') byId.set(r.id, r);
    group.forEach((p, i) => {
      const r = byId.get(ids[i]);
      if (r && ('result' in r || 'error' in r)) p.resolve(r);
      else p.reject(new UpstreamTransportError(`upstream left ${p.method} out of its batch answer`, true));
    });
  }

  private single(method: string, params: readonly unknown[], timeoutMs: number): Promise<UpstreamResponse> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params });
    return this.post(body, timeoutMs).then((text) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new UpstreamTransportError(`upstream answered ${method} with a body that is not JSON`, true);
      }
      const r = parsed as UpstreamResponse;
      if (typeof r !== 'object' || r === null || (!('result' in r) && !('error' in r))) {
        throw new UpstreamTransportError(`upstream answered ${method} with a body that is not a JSON-RPC response`, true);
      }
      return r;
    });
  }

  private post(body: string, timeoutMs: number): Promise<string> {
    const lib = this.url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      let written = false;
      let settled = false;
      const fail = (err: UpstreamTransportError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        reject(err);
      };
      const req = lib.request(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), accept: 'application/json' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (err) => fail(new UpstreamTransportError(`upstream response broke off: ${err.message}`, true, { cause: err })));
          res.on('end', () => {
            if (settled) return;
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            // Nodes answer JSON-RPC errors with 200 (geth) or 4xx/5xx (some proxies): a JSON-RPC body wins.
            if (status !== 200 && !/^\s*[{[]/.test(text)) {
              fail(new UpstreamTransportError(`upstream answered HTTP ${status}`, status >= 500 || status === 0));
              return;
            }
            settled = true;
            clearTimeout(timer);
            resolve(text);
          });
        },
      );
      const timer = setTimeout(() => fail(new UpstreamTransportError(`upstream did not answer within ${timeoutMs} ms`, written)), timeoutMs);
      req.on('error', (err: NodeJS.ErrnoException) => {
        const refused = err.code === 'ECONNREFUSED' || err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN' || err.code === 'EHOSTUNREACH';
        fail(new UpstreamTransportError(`upstream connection failed: ${err.code ?? err.message}`, written && !refused, { cause: err }));
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
