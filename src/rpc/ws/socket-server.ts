import { setMaxListeners } from 'node:events';
import type { IncomingMessage, Server } from 'node:http';
import { NodeRequestHead, type RequestHead } from '../../common/http/request-head.js';
import { statusLine } from '../../common/http/status-line.js';
import type { Duplex } from 'node:stream';
import type { Registry } from 'prom-client';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Logger } from '../../common/log.js';
import { counter, gauge } from '../../common/metrics.js';
import { ClientQuota } from '../../common/http/client-quota.js';
import type { WsLimits } from './config.js';
import type { Access, AccessDecision } from '../keys/access.js';
import { isRpcPath } from '../keys/access.js';
import type { NotificationSink } from './hub.js';

/** One open socket, as the calls it carries see it (eth_subscribe binds subscriptions to it). */
export interface SocketSession {
  /** Rate-limit identity, limiter and allow-list of the socket (its API key, or the public tier). */
  readonly access: Access;
  readonly client: string;
  readonly sink: NotificationSink;
  /** Subscription ids of this socket (removed from the hub when it closes). */
  readonly subscriptions: Set<string>;
  /** Aborts when the socket closes: every subscription bound to it ends, and a resume in progress stops. */
  readonly closed: AbortSignal;
}

export interface WsServerOptions {
  limits: WsLimits;
  /** Max size of one message (RPC_MAX_BODY_BYTES, as for an HTTP body). */
  maxMessageBytes: number;
  /** Answers one JSON-RPC message as POST / would; undefined when it held only notifications. */
  answer(text: string, session: SocketSession): Promise<string | undefined>;
  /** Who the connecting client is (its API key when the URL or x-api-key names one); refusals are HTTP answers. */
  admit(head: RequestHead): Promise<AccessDecision>;
  /** Called for every subscription of a closing socket. */
  unsubscribe(id: string): void;
  metrics: Registry;
  logger: Logger;
}

/**
 * One accepted WebSocket as serveSocket drives it, whichever library carries it: `ws` on node:http (wsPeer
 * below) or uWebSockets.js (uws-sockets.ts).
 */
export interface PeerSocket {
  readonly open: boolean;
  /** Bytes sent but not yet taken by the client's socket. */
  readonly bufferedAmount: number;
  send(text: string): void;
  /** Starts the closing handshake with a code and reason. */
  close(code: number, reason: string): void;
  /** Drops the connection at once. */
  terminate(): void;
  ping(): void;
  /** Stops reading the client's messages while RPC_WS_MAX_INFLIGHT of its calls run, and starts again. */
  pauseReading(): void;
  resumeReading(): void;
}

/** What the carrying library reports to serveSocket about one socket. */
export interface PeerEvents {
  message(text: string): void;
  pong(): void;
  closed(): void;
  /** The library could not hold the client's messages while reading was paused (uws-sockets.ts). */
  overflow(reason: string): void;
}

/** The sockets of one server: their count, and each one's cut-off (the total-buffered check closes the heaviest). */
export interface SocketRegistry {
  o: WsServerOptions;
  m: WsMetrics;
  cutOffs: Map<PeerSocket, CutOff>;
}

/** A server's handle: its open sockets, and closing every one of them. */
export interface SocketServer {
  close(): Promise<void>;
  sockets(): number;
}

export const POLICY_VIOLATION = 1008;
export const GOING_AWAY = 1001;
/** While a socket is not read (RPC_WS_MAX_INFLIGHT calls running), how often it is probed for a closed peer. */
const PAUSED_PROBE_MS = 250;

export type WsMetrics = ReturnType<typeof wsMetrics>;
export type CutOff = (code: number, reason: string, label: string) => void;

export function wsMetrics(registry: Registry) {
  return {
    sockets: gauge(registry, 'l2stack_rpc_ws_sockets', 'Open WebSocket connections'),
    refused: counter(registry, 'l2stack_rpc_ws_refused_total', 'WebSocket upgrades refused, by reason', ['reason'] as const),
    closed: counter(registry, 'l2stack_rpc_ws_closed_total', 'WebSocket connections closed by the server, by reason', ['reason'] as const),
    messages: counter(registry, 'l2stack_rpc_ws_messages_total', 'JSON-RPC messages received over WebSocket'),
  };
}

/** An upgrade refused as a plain HTTP answer (the client sees the status and why). */
function refuseUpgrade(m: WsMetrics, socket: Duplex, status: number, reason: string, message: string, retryAfterSeconds?: number): void {
  m.refused.inc({ reason });
  const body = JSON.stringify({ error: message });
  const retry = retryAfterSeconds === undefined ? '' : `retry-after: ${retryAfterSeconds}\r\n`;
  socket.end(`HTTP/1.1 ${statusLine(status)}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${retry}connection: close\r\n\r\n${body}`);
}

/** RPC_WS_MAX_SOCKETS_PER_CLIENT as both transports count it: a slot per open socket of a client (its access.client). */
export const socketQuota = (limits: WsLimits): ClientQuota => new ClientQuota(limits.maxSocketsPerClient);

/** The refusal of an upgrade past RPC_WS_MAX_SOCKETS_PER_CLIENT (HTTP 429, retry after 1 s). */
export const perClientRefusal = (limits: WsLimits): string =>
  `too many WebSocket connections from this client: at most ${limits.maxSocketsPerClient} (RPC_WS_MAX_SOCKETS_PER_CLIENT), subscribed or not; close one or use HTTP`;

/** Every 250 ms: when all sockets together queue more than the limit, the heaviest are cut off first. */
export function watchTotalBuffered(limit: number, cutOffs: Map<PeerSocket, CutOff>): NodeJS.Timeout {
  const timer = setInterval(() => {
    let total = 0;
    for (const ws of cutOffs.keys()) total += ws.bufferedAmount;
    if (total <= limit) return;
    const heaviest = [...cutOffs.keys()].sort((a, b) => b.bufferedAmount - a.bufferedAmount);
    for (const ws of heaviest) {
      if (total <= limit || ws.bufferedAmount === 0) break;
      total -= ws.bufferedAmount;
      cutOffs.get(ws)?.(POLICY_VIOLATION, `too slow: all sockets' queue over ${limit} bytes (RPC_WS_MAX_TOTAL_BUFFERED_BYTES), this one held most`, 'total');
    }
  }, 250);
  timer.unref();
  return timer;
}

/**
 * JSON-RPC over WebSocket on the HTTP port (upgrade on `/`): each text message is answered like a POST
 * body (same validation, allow-list, rate limit, batch and byte limits), and subscriptions push
 * notifications. Bounded per socket: calls in flight (reading pauses), subscriptions, bytes queued for a
 * client that does not read (it is cut off with 1008 and the reason), idle time, dead peers (ping).
 */
export function attachWebSocket(server: Server, o: WsServerOptions): SocketServer {
  const wss = new WebSocketServer({ noServer: true, maxPayload: o.maxMessageBytes, perMessageDeflate: false, clientTracking: true });
  const m = wsMetrics(o.metrics);
  const refuse = (socket: Duplex, status: number, reason: string, message: string, retryAfterSeconds?: number) =>
    refuseUpgrade(m, socket, status, reason, message, retryAfterSeconds);
  // Every socket's cut-off, so the total check can close the heaviest ones.
  const cutOffs = new Map<PeerSocket, CutOff>();
  const totalCheck = watchTotalBuffered(o.limits.maxTotalBufferedBytes, cutOffs);
  const registry: SocketRegistry = { o, m, cutOffs };
  const perClient = socketQuota(o.limits);

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    if (!isRpcPath(req.url)) return refuse(socket, 404, 'path', `WebSocket is served on / (or /v1/<key>) only, not ${(req.url ?? '').split('?')[0]}`);
    if (wss.clients.size >= o.limits.maxSockets) {
      return refuse(socket, 503, 'sockets', `too many WebSocket connections: at most ${o.limits.maxSockets} (RPC_WS_MAX_SOCKETS); retry later or use HTTP`);
    }
    o.admit(new NodeRequestHead(req)).then(
      (decision) => {
        if (!decision.ok) return refuse(socket, decision.status, decision.status === 429 ? 'key_failures' : 'key', decision.message, decision.retryAfterSeconds);
        const { client } = decision.access;
        if (!perClient.take(client)) return refuse(socket, 429, 'client_sockets', perClientRefusal(o.limits), 1);
        // The raw socket closes whatever happens (handshake failed, socket served and closed): the slot goes with it.
        socket.once('close', () => perClient.release(client));
        wss.handleUpgrade(req, socket, head, (ws) => serveWs(ws, decision.access, registry));
      },
      (err: unknown) => {
        o.logger.error({ err }, 'websocket admission failed');
        refuse(socket, 503, 'error', 'the endpoint could not check this connection; retry');
      },
    );
  };
  server.on('upgrade', onUpgrade);

  return {
    sockets: () => wss.clients.size,
    close: () =>
      new Promise<void>((resolve) => {
        server.off('upgrade', onUpgrade);
        clearInterval(totalCheck);
        for (const ws of wss.clients) ws.close(GOING_AWAY, 'server shutting down');
        setTimeout(() => {
          for (const ws of wss.clients) ws.terminate();
        }, 1_000).unref();
        wss.close(() => resolve());
      }),
  };
}

/** A `ws` socket as a PeerSocket, its events handed to serveSocket. */
function serveWs(ws: WebSocket, access: Access, registry: SocketRegistry): void {
  const raw = (ws as unknown as { _socket?: { pause(): void; resume(): void } })._socket;
  const peer: PeerSocket = {
    get open() {
      return ws.readyState === ws.OPEN;
    },
    get bufferedAmount() {
      return ws.bufferedAmount;
    },
    send: (text) => ws.send(text),
    close: (code, reason) => ws.close(code, reason),
    terminate: () => ws.terminate(),
    ping: () => ws.ping(),
    pauseReading: () => raw?.pause(),
    resumeReading: () => raw?.resume(),
  };
  const events = serveSocket(peer, access, registry);
  ws.on('message', (data: RawData, isBinary: boolean) =>
    events.message(isBinary ? Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data as ArrayBuffer)]).toString('utf8') : data.toString()),
  );
  ws.on('pong', events.pong);
  ws.on('error', (err) => registry.o.logger.debug({ err }, 'websocket error'));
  ws.on('close', events.closed);
}

/** One accepted socket: its session, its cut-off, its keep-alive and its reading, until it closes. */
export function serveSocket(ws: PeerSocket, access: Access, { o, m, cutOffs }: SocketRegistry): PeerEvents {
  let cut = false;
  const cutOff: CutOff = (code, reason, label) => {
    if (cut) return;
    cut = true;
    m.closed.inc({ reason: label });
    // A close frame's reason is at most 123 bytes.
    ws.close(code, Buffer.from(reason).subarray(0, 123).toString());
    // A client that does not read will not finish the closing handshake either.
    setTimeout(() => ws.terminate(), 1_000).unref();
  };
  cutOffs.set(ws, cutOff);
  m.sockets.set(cutOffs.size);
  const sink: NotificationSink = {
    send(text) {
      if (cut || !ws.open) return false;
      if (ws.bufferedAmount + text.length > o.limits.maxBufferedBytes) {
        cutOff(POLICY_VIOLATION, `client too slow: over ${o.limits.maxBufferedBytes} bytes queued (RPC_WS_MAX_BUFFERED_BYTES)`, 'slow');
        return false;
      }
      ws.send(text);
      return true;
    },
  };
  const life = new AbortController();
  // One listener per subscription of this socket (hub.ts): RPC_WS_MAX_SUBSCRIPTIONS bounds them, not Node's default 10.
  setMaxListeners(0, life.signal);
  const session: SocketSession = { access, client: access.client, sink, subscriptions: new Set(), closed: life.signal };
  const activity = { lastActive: Date.now() };
  let alive = true;
  const timer = keepAlive(ws, session, o.limits, cutOff, activity, () => {
    const was = alive;
    alive = false;
    return was;
  });
  const reading = readMessages(ws, session, o, m, activity);
  return {
    message: reading.message,
    pong: () => {
      alive = true;
    },
    overflow: (reason) => cutOff(POLICY_VIOLATION, reason, 'queued'),
    closed: () => {
      clearInterval(timer);
      reading.stop();
      cutOffs.delete(ws);
      life.abort();
      for (const id of session.subscriptions) o.unsubscribe(id);
      session.subscriptions.clear();
      m.sockets.set(cutOffs.size);
    },
  };
}

/**
 * Pings the peer (cut off when it did not answer the last ping: `answered` reports and resets that) and
 * closes a socket idle with no subscription.
 */
function keepAlive(ws: PeerSocket, session: SocketSession, limits: WsLimits, cutOff: CutOff, activity: { lastActive: number }, answered: () => boolean): NodeJS.Timeout {
  // The idle bound is checked every quarter of it, so a socket is cut within 1.25x RPC_WS_IDLE_TIMEOUT_MS.
  const tick = Math.max(250, Math.min(limits.pingMs, Math.floor(limits.idleTimeoutMs / 4)));
  let pingedAt = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    if (session.subscriptions.size === 0 && now - activity.lastActive > limits.idleTimeoutMs) {
      return cutOff(1000, `idle for ${limits.idleTimeoutMs} ms with no subscription (RPC_WS_IDLE_TIMEOUT_MS)`, 'idle');
    }
    if (now - pingedAt < limits.pingMs) return;
    pingedAt = now;
    if (!answered()) return cutOff(GOING_AWAY, 'no answer to ping', 'dead');
    ws.ping();
  }, tick);
  timer.unref();
  return timer;
}

/** Answers each message; reading pauses while RPC_WS_MAX_INFLIGHT calls of this socket run. */
function readMessages(ws: PeerSocket, session: SocketSession, o: WsServerOptions, m: WsMetrics, activity: { lastActive: number }): { message(text: string): void; stop(): void } {
  let inflight = 0;
  // A paused socket reads nothing, its peer's close included: a client that sent many slow calls (resumes)
  // and went away would hold them, and what they read from the node, until they all finished. Pings
  // written meanwhile meet the closed peer's reset, which closes this side and cancels its work.
  let probe: NodeJS.Timeout | undefined;
  const pause = () => {
    ws.pauseReading();
    probe ??= setInterval(() => {
      if (ws.open) ws.ping();
    }, PAUSED_PROBE_MS);
    probe.unref();
  };
  const resume = () => {
    clearInterval(probe);
    probe = undefined;
    ws.resumeReading();
  };
  const message = (text: string) => {
    activity.lastActive = Date.now();
    m.messages.inc();
    inflight++;
    if (inflight >= o.limits.maxInflight) pause();
    o.answer(text, session)
      .then((reply) => {
        if (reply !== undefined) session.sink.send(reply);
      })
      .catch((err: unknown) => o.logger.error({ err }, 'websocket message failed'))
      .finally(() => {
        inflight--;
        if (inflight === o.limits.maxInflight - 1) resume();
      });
  };
  return { message, stop: () => clearInterval(probe) };
}
