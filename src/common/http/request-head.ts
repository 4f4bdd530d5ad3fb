import type { IncomingMessage } from 'node:http';
import { rawHeader } from './raw-header.js';

/**
 * What the JSON-RPC endpoint reads of a request before its body (the rate-limit identity, the API key, CORS),
 * whichever HTTP stack carried it: node:http (NodeRequestHead) or uWebSockets.js (src/rpc/transport/uws/http.ts),
 * whose request object is gone by the time the body has arrived.
 */
export interface RequestHead {
  /** The path and query as sent. */
  readonly url: string;
  /** The socket's peer address. */
  readonly remoteAddress: string;
  /** The first header of that name (lower case), or undefined. */
  header(name: string): string | undefined;
}

/** A node:http request's head, its headers read from `rawHeaders` when asked (see raw-header.ts). */
export class NodeRequestHead implements RequestHead {
  constructor(readonly req: IncomingMessage) {}

  get url(): string {
    return this.req.url ?? '';
  }

  get remoteAddress(): string {
    return this.req.socket.remoteAddress ?? 'unknown';
  }

  header(name: string): string | undefined {
    return rawHeader(this.req, name);
  }
}
