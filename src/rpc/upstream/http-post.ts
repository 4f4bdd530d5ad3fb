import { isAscii } from 'node:buffer';
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { UpstreamTransportError } from '../errors.js';

/* One HTTP exchange with a node (client.ts sends JSON-RPC calls through it), and what its failures mean. */

/**
 * A node's answer as it came. Node answers are ASCII (hex, JSON punctuation): decoded as latin1 that is a
 * plain copy into a one-byte string; anything else is decoded as UTF-8.
 */
export class Body {
  readonly ascii: boolean;
  private decoded: string | undefined;
  constructor(readonly bytes: Buffer) {
    this.ascii = isAscii(bytes);
  }

  /** Decoded on first read (an ASCII answer of the fast shape never is: see client.ts readBody). */
  get text(): string {
    return (this.decoded ??= this.ascii ? this.bytes.toString('latin1') : this.bytes.toString('utf8'));
  }
}

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
 * The node did not answer within the time given: the request was sent, so a write is ambiguous. A compute
 * call (pool.ts `compute`) that times out says nothing about the node's health (the call was expensive).
 */
export class UpstreamTimeoutError extends UpstreamTransportError {
  override name = 'UpstreamTimeoutError';
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

// A socket that errors while no request owns it (between requests, or after the node answered before
// reading our whole body) would otherwise raise an uncaught 'error' and end the process (`write EPIPE`).
const guarded = new WeakSet<Socket>();
const guard = (socket: Socket) => {
  if (guarded.has(socket)) return;
  guarded.add(socket);
  socket.on('error', () => undefined);
};

/** A node as a client posts to it: its URL, the keep-alive agent of its sockets, the most of an answer read. */
export interface NodeEndpoint {
  readonly url: URL;
  readonly agent: http.Agent;
  /** RPC_MAX_RESPONSE_BYTES: an answer is not read past this. */
  readonly maxResponseBytes: number;
}

/**
 * One HTTP exchange. Reads (`idempotent`) on a reused keep-alive socket that the node had already
 * closed are sent once more on a fresh connection: that race is ours, not a node failure.
 */
export function post(
  node: NodeEndpoint,
  body: string,
  timeoutMs: number,
  idempotent: boolean,
  retried = false,
): Promise<Body> {
  const lib = node.url.protocol === 'https:' ? https : http;
  const bytes = Buffer.byteLength(body);
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
    const headers = { 'content-type': 'application/json', 'content-length': bytes, accept: 'application/json' };
    const req = lib.request(node.url, { method: 'POST', agent: node.agent, headers }, (res) => {
      responded = true;
      readAnswer(res, bytes, node.maxResponseBytes, fail, (answer) => {
        if (settled) return;
        // Answered before it read our whole body: the connection is in an unknown state, never reuse it.
        if (!written) req.destroy();
        settle();
        resolve(answer);
      });
    });
    req.on('socket', guard);
    const timer = setTimeout(
      () => fail(new UpstreamTimeoutError(`upstream did not answer within ${timeoutMs} ms`, written)),
      timeoutMs,
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (settled) return;
      const resend = idempotent && !retried && req.reusedSocket;
      const failure = requestFailure(err, { responded, written, bytes, resend });
      if (failure !== 'resend') return fail(failure);
      settle();
      post(node, body, timeoutMs, idempotent, true).then(resolve, reject);
    });
    req.end(body, () => {
      written = true;
    });
  });
}

/**
 * The node's answer to a `bytes`-byte request, read whole into `done`, or a failure to `fail`: the request
 * refused for its size (413), the answer past `max` bytes, broken off, or an HTTP error without a JSON body.
 */
function readAnswer(
  res: http.IncomingMessage,
  bytes: number,
  max: number,
  fail: (err: UpstreamTransportError) => void,
  done: (answer: Body) => void,
): void {
  const status = res.statusCode ?? 0;
  if (status === 413) {
    return fail(
      new UpstreamOversizeError(`the node refused a ${bytes}-byte request as too large (HTTP 413)`, 'request', bytes),
    );
  }
  const chunks: Buffer[] = [];
  let size = 0;
  res.on('data', (c: Buffer) => {
    size += c.length;
    if (size <= max) return void chunks.push(c);
    fail(
      new UpstreamOversizeError(`the answer is larger than ${max} bytes (RPC_MAX_RESPONSE_BYTES)`, 'response', size),
    );
  });
  res.on('error', (err) =>
    fail(new UpstreamTransportError(`upstream response broke off: ${err.message}`, true, { cause: err })),
  );
  res.on('end', () => {
    const answer = new Body(Buffer.concat(chunks));
    // Nodes answer JSON-RPC errors with 200 (geth) or 4xx/5xx (some proxies): a JSON-RPC body wins.
    if (status === 200 || /^\s*[{[]/.test(answer.bytes.toString('latin1', 0, 64))) return done(answer);
    fail(new UpstreamTransportError(`upstream answered HTTP ${status}`, status >= 500 || status === 0));
  });
}
