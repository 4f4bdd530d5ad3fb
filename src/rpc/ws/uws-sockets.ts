import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, us_socket_context_t } from '@trufflesuite/uws-js-unofficial';
import type { RequestHead } from '../../common/http/request-head.js';
import { statusLine } from '../../common/http/status-line.js';
import type { Access } from '../keys/access.js';
import { isRpcPath } from '../keys/access.js';
import { descriptors } from '../../common/http/descriptors.js';
import { GOING_AWAY, perClientRefusal, serveSocket, socketQuota, watchTotalBuffered, wsMetrics, type CutOff, type PeerEvents, type PeerSocket, type SocketRegistry, type SocketServer, type WsServerOptions } from './socket-server.js';

/** What uWS keeps for one socket: its access (set at upgrade), then its peer and serveSocket's events. */
interface SocketData {
  access: Access;
  /** Holds a slot of RPC_WS_MAX_SOCKETS_PER_CLIENT and of the process's descriptors until the socket closes. */
  holding: boolean;
  peer?: UwsPeer;
  events?: PeerEvents;
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
      return this.events!.overflow(`too many calls waiting: over ${this.maxWaitingBytes} bytes of messages beyond RPC_WS_MAX_INFLIGHT calls in flight (RPC_WS_MAX_BUFFERED_BYTES)`);
    }
    this.waiting.push(text);
  }
}

/** An upgrade refused as a plain HTTP answer (the client sees the status and why). */
function refuse(registry: SocketRegistry, res: HttpResponse, status: number, reason: string, message: string, retryAfterSeconds?: number): void {
  registry.m.refused.inc({ reason });
  res.cork(() => {
    res.writeStatus(statusLine(status)).writeHeader('content-type', 'application/json');
    if (retryAfterSeconds !== undefined) res.writeHeader('retry-after', String(retryAfterSeconds));
    res.end(JSON.stringify({ error: message }), true);
  });
}

/** What an upgrade needs of uWS's request, read while it lives (it is freed when the handler returns). */
function upgradeHead(res: HttpResponse, req: HttpRequest) {
  const query = req.getQuery();
  const url = query ? `${req.getUrl()}?${query}` : req.getUrl();
  const apiKey = req.getHeader('x-api-key');
  const forwarded = req.getHeader('x-forwarded-for');
  const head: RequestHead = {
    url,
    remoteAddress: Buffer.from(res.getRemoteAddressAsText()).toString() || 'unknown',
    header: (name) => (name === 'x-api-key' ? apiKey || undefined : name === 'x-forwarded-for' ? forwarded || undefined : undefined),
  };
  return { head, url, key: req.getHeader('sec-websocket-key'), protocol: req.getHeader('sec-websocket-protocol'), extensions: req.getHeader('sec-websocket-extensions') };
}

/**
 * A socket's slot of RPC_WS_MAX_SOCKETS_PER_CLIENT and its descriptor of the process (uWS has no accept hook: a
 * socket is counted once upgraded): `hold` answers the refusal when either is full, `release` gives both back.
 */
function socketSlots(limits: WsServerOptions['limits']) {
  const perClient = socketQuota(limits);
  return {
    hold(client: string): { status: number; reason: string; message: string } | undefined {
      if (!perClient.take(client)) return { status: 429, reason: 'client_sockets', message: perClientRefusal(limits) };
      if (descriptors.take()) return undefined;
      perClient.release(client);
      return { status: 503, reason: 'descriptors', message: `too many connections to this process: ${descriptors.clientCap} (ulimit -n less HTTP_FD_RESERVE); retry later` };
    },
    release(client: string): void {
      perClient.release(client);
      descriptors.release();
    },
  };
}

/**
 * JSON-RPC over WebSocket on uWebSockets.js (RPC_TRANSPORT=uws), on the endpoint's HTTP port like
 * attachWebSocket on node:http: the same admission (path, RPC_WS_MAX_SOCKETS, API key, RPC_WS_MAX_SOCKETS_PER_CLIENT), the same session,
 * limits and keep-alive (serveSocket). uWS's own idle timeout and automatic pings are off: serveSocket's
 * RPC_WS_PING_MS and RPC_WS_IDLE_TIMEOUT_MS apply.
 */
export function attachUwsWebSocket(app: TemplatedApp, o: WsServerOptions): SocketServer {
  const m = wsMetrics(o.metrics);
  const cutOffs = new Map<PeerSocket, CutOff>();
  const registry: SocketRegistry = { o, m, cutOffs };
  const totalCheck = watchTotalBuffered(o.limits.maxTotalBufferedBytes, cutOffs);
  const open = new Set<UwsPeer>();
  let upgrading = 0;
  const slots = socketSlots(o.limits);

  app.ws<SocketData>('/*', {
    maxPayloadLength: o.maxMessageBytes,
    idleTimeout: 0,
    sendPingsAutomatically: false,
    // serveSocket cuts a slow reader off at RPC_WS_MAX_BUFFERED_BYTES before sending; uWS must never drop a message silently below that.
    maxBackpressure: o.limits.maxBufferedBytes + o.maxMessageBytes,
    upgrade: (res: HttpResponse, req: HttpRequest, context: us_socket_context_t) => {
      const { head, url, key, protocol, extensions } = upgradeHead(res, req);
      if (!isRpcPath(url)) return refuse(registry, res, 404, 'path', `WebSocket is served on / (or /v1/<key>) only, not ${req.getUrl()}`);
      if (open.size + upgrading >= o.limits.maxSockets) {
        return refuse(registry, res, 503, 'sockets', `too many WebSocket connections: at most ${o.limits.maxSockets} (RPC_WS_MAX_SOCKETS); retry later or use HTTP`);
      }
      let aborted = false;
      res.onAborted(() => (aborted = true));
      upgrading++;
      o.admit(head)
        .then(
          (decision) => {
            if (aborted) return;
            if (!decision.ok) return refuse(registry, res, decision.status, decision.status === 429 ? 'key_failures' : 'key', decision.message, decision.retryAfterSeconds);
            const over = slots.hold(decision.access.client);
            if (over) return refuse(registry, res, over.status, over.reason, over.message, 1);
            res.cork(() => res.upgrade<SocketData>({ access: decision.access, holding: true }, key, protocol, extensions, context));
          },
          (err: unknown) => {
            o.logger.error({ err }, 'websocket admission failed');
            if (!aborted) refuse(registry, res, 503, 'error', 'the endpoint could not check this connection; retry');
          },
        )
        .finally(() => upgrading--);
    },
    open: (ws) => {
      const data = ws.getUserData();
      const peer = new UwsPeer(ws, o.limits.maxBufferedBytes);
      open.add(peer);
      data.peer = peer;
      peer.events = serveSocket(peer, data.access, registry);
    },
    message: (ws, message) => {
      // The message's memory is uWS's until this returns: decoded here.
      ws.getUserData().peer?.received(Buffer.from(message).toString('utf8'));
    },
    pong: (ws) => ws.getUserData().peer?.events?.pong(),
    close: (ws) => {
      const data = ws.getUserData();
      if (data.holding) {
        data.holding = false;
        slots.release(data.access.client);
      }
      const peer = data.peer;
      if (!peer) return;
      peer.closed = true;
      open.delete(peer);
      peer.events?.closed();
    },
  });

  return {
    sockets: () => open.size,
    close: async () => {
      clearInterval(totalCheck);
      for (const peer of [...open]) peer.close(GOING_AWAY, 'server shutting down');
      await new Promise((resolve) => setTimeout(resolve, open.size === 0 ? 0 : 1_000).unref());
      for (const peer of [...open]) peer.terminate();
    },
  };
}
