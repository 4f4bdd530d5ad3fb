import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, us_socket_context_t } from 'uwebsockets';
import type { Access } from '../../keys/access.js';
import type { UwsConnections } from './connections.js';
import { refuse, UwsHead } from './reply.js';
import { socketSessions, type PeerEvents, type PeerSocket, type WsServerOptions } from '../session.js';

/**
 * What uWS keeps for one socket: its access, the release of its slots and its peer address (set at upgrade), then its
 * peer and the session's events.
 */
interface SocketData {
  access: Access;
  release: () => void;
  client: string;
  peer?: UwsPeer;
}

/**
 * A uWS socket as serveSocket's PeerSocket. uWS cannot stop reading one WebSocket, so "paused" means
 * messages wait here (answered in order when the calls in flight drop below RPC_WS_MAX_INFLIGHT), up to
 * RPC_WS_MAX_BUFFERED_BYTES of them; past that the socket is cut off with 1008 naming the limit, where `ws`
 * on node:http would leave them in the kernel's buffers.
 */
class UwsPeer implements PeerSocket {
  closed = false;
  private paused = false;
  private readonly waiting: string[] = [];
  private waitingBytes = 0;

  constructor(
    private readonly ws: WebSocket<SocketData>,
    private readonly maxWaitingBytes: number,
  ) {}

  events?: PeerEvents;

  get open(): boolean {
    return !this.closed;
  }

  get bufferedAmount(): number {
    return this.closed ? 0 : this.ws.getBufferedAmount();
  }

  send(text: string): void {
    if (!this.closed) this.ws.cork(() => this.ws.send(text));
  }

  close(code: number, reason: string): void {
    if (!this.closed) this.ws.end(code, reason);
  }

  terminate(): void {
    if (!this.closed) this.ws.close();
  }

  ping(): void {
    if (!this.closed) this.ws.ping();
  }

  pauseReading(): void {
    this.paused = true;
  }

  resumeReading(): void {
    this.paused = false;
    // Each delivered message may pause reading again (its call fills the in-flight limit).
    while (!this.paused && !this.closed && this.waiting.length > 0) {
      const text = this.waiting.shift()!;
      this.waitingBytes -= text.length;
      this.events!.message(text);
    }
  }

  received(text: string): void {
    if (!this.paused) return this.events!.message(text);
    this.waitingBytes += text.length;
    if (this.waitingBytes > this.maxWaitingBytes) {
      this.waiting.length = 0;
      this.waitingBytes = 0;
      return this.events!.overflow(
        `too many calls waiting: over ${this.maxWaitingBytes} bytes of messages beyond RPC_WS_MAX_INFLIGHT calls in flight (RPC_WS_MAX_BUFFERED_BYTES)`,
      );
    }
    this.waiting.push(text);
  }
}

/**
 * JSON-RPC over WebSocket on uWebSockets.js (RPC_TRANSPORT=uws): admission, session and limits are the
 * sessions' (session.ts). The socket keeps the connection slots it took when accepted (uws/connections.ts) until it
 * closes: uWS reports no close of an upgraded socket to App.filter, so they are given back here. uWS's own idle
 * timeout and automatic pings are off: the session's RPC_WS_PING_MS and RPC_WS_IDLE_TIMEOUT_MS apply.
 */
export function attachUwsWebSocket(
  app: TemplatedApp,
  o: WsServerOptions,
  connections: UwsConnections,
): { close(): Promise<void> } {
  const sessions = socketSessions(o);
  app.ws<SocketData>('/*', {
    maxPayloadLength: o.maxMessageBytes,
    idleTimeout: 0,
    sendPingsAutomatically: false,
    // The session cuts a slow reader off at RPC_WS_MAX_BUFFERED_BYTES before sending; uWS must never drop a message
    // silently below that.
    maxBackpressure: o.limits.maxBufferedBytes + o.maxMessageBytes,
    upgrade: (res: HttpResponse, req: HttpRequest, context: us_socket_context_t) => {
      const head = new UwsHead(res, req, true);
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      let aborted = false;
      res.onAborted(() => (aborted = true));
      sessions.upgrade(head, {
        gone: () => aborted,
        refuse: (r) => refuse(res, r),
        accept: (access, release) =>
          res.cork(() =>
            res.upgrade<SocketData>(
              { access, release, client: head.remoteAddress },
              key,
              protocol,
              extensions,
              context,
            ),
          ),
      });
    },
    open: (ws) => {
      const data = ws.getUserData();
      data.peer = new UwsPeer(ws, o.limits.maxBufferedBytes);
      data.peer.events = sessions.serve(data.peer, data.access);
    },
    message: (ws, message) => {
      // The message's memory is uWS's until this returns: decoded here.
      ws.getUserData().peer?.received(Buffer.from(message).toString('utf8'));
    },
    pong: (ws) => ws.getUserData().peer?.events?.pong(),
    close: (ws) => {
      const { release, peer, client } = ws.getUserData();
      release();
      connections.closedWebSocket(client);
      if (!peer) return;
      peer.closed = true;
      peer.events?.closed();
    },
  });
  return { close: () => sessions.close() };
}
