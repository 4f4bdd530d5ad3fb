import WebSocket from 'ws';
import { redactUrl } from '../../common/config/env.js';
import type { Logger } from '../../common/log.js';

/** The WebSocket address a node usually serves next to its HTTP one (anvil and reth: the same port). */
export function wsUrlFor(httpUrl: string): string {
  const u = new URL(httpUrl);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.toString();
}

export interface HeadSubscriptionOptions {
  url: string;
  /** Every newHeads notification's header object. */
  onHeader(header: unknown): void;
  /** Called with true once subscribed, false when the connection is gone. */
  onLive(live: boolean): void;
  /** Wait before connecting again after a failure. */
  retryMs: number;
  logger: Logger;
}

/**
 * eth_subscribe("newHeads") on one node, reconnecting after failures. A push arrives within a
 * millisecond of the block, so while it is live the head tracker is as fresh as the node and nothing
 * needs to ask the node for its block number. Nodes without WebSocket simply never go live: the pool's
 * poll then feeds the tracker and callers that need a fresh head ask for one.
 */
export class HeadSubscription {
  private socket: WebSocket | undefined;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private warned = false;

  constructor(private readonly options: HeadSubscriptionOptions) {}

  start(): void {
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    this.socket?.terminate();
  }

  private connect(): void {
    if (this.stopped) return;
    const o = this.options;
    const socket = new WebSocket(o.url, { handshakeTimeout: 5_000, maxPayload: 1_048_576 });
    this.socket = socket;
    let subscription: string | undefined;
    socket.on('open', () => {
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }));
    });
    socket.on('message', (data: WebSocket.RawData) => {
      let msg: {
        id?: unknown;
        result?: unknown;
        error?: unknown;
        method?: string;
        params?: { subscription?: unknown; result?: unknown };
      };
      try {
        msg = JSON.parse(data.toString()) as typeof msg;
      } catch {
        return;
      }
      if (msg.id === 1) {
        if (typeof msg.result === 'string') {
          subscription = msg.result;
          this.warned = false;
          o.onLive(true);
        } else socket.terminate();
        return;
      }
      if (msg.method === 'eth_subscription' && msg.params?.subscription === subscription)
        o.onHeader(msg.params?.result);
    });
    socket.on('error', (err) => {
      if (!this.warned)
        o.logger.info(
          { err: err.message, url: redactUrl(o.url) },
          'head subscription unavailable; polling the node instead',
        );
      this.warned = true;
    });
    socket.on('close', () => {
      if (subscription !== undefined) o.onLive(false);
      subscription = undefined;
      if (this.stopped) return;
      this.retry = setTimeout(() => this.connect(), o.retryMs);
      this.retry.unref();
    });
  }
}
