import type { HttpRequest, HttpResponse } from 'uwebsockets';
import { formatPeerAddress } from '../../../common/http/peer-address.js';
import type { RequestHead } from '../../../common/http/request-head.js';
import { statusLine } from '../../../common/http/status-line.js';
import type { Reply } from '../../envelope.js';
import type { Refusal } from '../session.js';

/** uWS's header value, '' when absent, as the RequestHead's undefined. */
export const header = (req: HttpRequest, name: string): string | undefined => req.getHeader(name) || undefined;

/**
 * A request's head, read while uWS's request object lives (it is freed when the handler returns, before a
 * body arrives or an upgrade is admitted): the path and query, the peer, and the only headers the endpoint
 * reads (x-forwarded-for only when `forwarded`: trusted proxy hops are configured).
 */
export class UwsHead implements RequestHead {
  readonly url: string;
  readonly remoteAddress: string;
  private readonly origin: string | undefined;
  private readonly apiKey: string | undefined;
  private readonly forwarded: string | undefined;

  /** `path`: req.getUrl(), when the caller has read it already (one call less into uWS). */
  constructor(res: HttpResponse, req: HttpRequest, forwarded: boolean, path = req.getUrl()) {
    const query = req.getQuery();
    this.url = query ? `${path}?${query}` : path;
    this.origin = header(req, 'origin');
    this.apiKey = header(req, 'x-api-key');
    this.forwarded = forwarded ? header(req, 'x-forwarded-for') : undefined;
    // From uWS's binary form, cheaper than its text, written as Node writes it (peer-address.ts): a client is named
    // alike on both stacks.
    this.remoteAddress = formatPeerAddress(new Uint8Array(res.getRemoteAddress()));
  }

  header(name: string): string | undefined {
    return name === 'origin'
      ? this.origin
      : name === 'x-api-key'
        ? this.apiKey
        : name === 'x-forwarded-for'
          ? this.forwarded
          : undefined;
  }
}

/**
 * What a response writer needs to know of one request: whether it was answered or the client left (no write may
 * follow).
 */
export interface Exchange {
  readonly res: HttpResponse;
  aborted: boolean;
}

export const JSON_HEADERS: readonly string[] = ['content-type', 'application/json'];
export const NO_HEADERS: readonly string[] = [];

/** Bodies above this go out as the socket takes them (streamEnd), never copied. */
const STREAM_BYTES = 65_536;

/**
 * One corked write of status, headers (then `more`: two lists, so neither is copied) and body; nothing once the client
 * has gone.
 */
export function write(
  x: Exchange,
  status: number,
  headers: readonly string[],
  body: Reply | undefined,
  close = false,
  more = NO_HEADERS,
): void {
  if (x.aborted) return;
  x.aborted = true; // answered: a later write (a timeout racing the answer) must not touch the freed response
  // A node's large answer comes as chunks (envelope.ts: the cached bytes with this call's id spliced around them).
  const chunks = Array.isArray(body)
    ? body
    : typeof body === 'string' && body.length > STREAM_BYTES
      ? [Buffer.from(body)]
      : undefined;
  const total = chunks?.reduce((n, c) => n + c.length, 0) ?? 0;
  x.res.cork(() => {
    // uWS answers 200 OK unless told otherwise: one call into it less for nearly every reply.
    if (status !== 200) x.res.writeStatus(statusLine(status));
    for (let i = 0; i < headers.length; i += 2) x.res.writeHeader(headers[i]!, headers[i + 1]!);
    for (let i = 0; i < more.length; i += 2) x.res.writeHeader(more[i]!, more[i + 1]!);
    // Without arguments: endWithoutBody(undefined, …) leaves the response open, which uWS treats as a fatal error.
    if (body === undefined && status === 204) return void x.res.endWithoutBody();
    if (chunks === undefined) return void x.res.end(body as string | undefined, close);
    if (total > STREAM_BYTES && !close) return streamEnd(x.res, chunks, total);
    x.res.end(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), close);
  });
}

/** An upgrade refused as a plain HTTP answer (the client sees the status and why). */
export function refuse(res: HttpResponse, { status, message, retryAfterSeconds: after }: Refusal): void {
  const retry = after === undefined ? NO_HEADERS : ['retry-after', String(after)];
  write({ res, aborted: false }, status, JSON_HEADERS, JSON.stringify({ error: message }), true, retry);
}

/**
 * A large body handed over chunk by chunk as the client's socket takes it: tryEnd writes what fits (with the
 * whole content-length), onWritable goes on from where the socket stopped. Nothing is copied: end() would
 * copy what did not fit into uWS's own buffer, and joining the chunks would copy the cached answer for every
 * reply (600 KB of garbage per call: the collector then took ~0.5 ms per 1,000-log answer).
 */
function streamEnd(res: HttpResponse, chunks: readonly Buffer[], total: number): void {
  let next = 0;
  // The response's write offset where chunks[next] begins.
  let chunkStart = res.getWriteOffset();
  const pump = (): boolean => {
    while (next < chunks.length) {
      const chunk = chunks[next]!;
      const written = res.getWriteOffset() - chunkStart;
      const [ok, done] = res.tryEnd(written === 0 ? chunk : chunk.subarray(written), total);
      if (done) return true;
      if (!ok) return false;
      chunkStart += chunk.length;
      next++;
    }
    return true;
  };
  if (!pump()) res.onWritable(pump);
}
