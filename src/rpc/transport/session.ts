import { setMaxListeners } from 'node:events';
import type { Registry } from 'prom-client';
import type { RequestHead } from '../../common/http/request-head.js';
import type { Logger } from '../../common/log.js';
import { counter, gauge } from '../../common/metrics.js';
import { ClientQuota } from '../../common/http/client-quota.js';
import type { Awaitable } from '../types.js';
import type { WsLimits } from '../ws/config.js';
import type { NotificationSink } from '../ws/types.js';
import { isRpcPath, type Access, type AccessDecision } from '../keys/access.js';

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
  admit(head: RequestHead): Awaitable<AccessDecision>;
  /** Called for every subscription of a closing socket. */
  unsubscribe(id: string): void;
  metrics: Registry;
  logger: Logger;
}

/**
 * One accepted WebSocket as serveSocket drives it, whichever library carries it: `ws` on node:http
 * (node/ws.ts) or uWebSockets.js (uws/ws.ts).
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
  /** The library could not hold the client's messages while reading was paused (uws/ws.ts). */
  overflow(reason: string): void;
}

/** An upgrade refused, as the adapter answers it in plain HTTP: status, the metric's reason, the message. */
export interface Refusal {
  status: number;
  reason: string;
  message: string;
  retryAfterSeconds?: number;
}

/** One upgrade as its adapter carries out what the sessions decide. */
export interface Upgrade {
  /** Whether the client left during admission (then nothing is written or held). */
  gone(): boolean;
  refuse(r: Refusal): void;
  /** Completes the handshake; `release` gives back the client's slots, once, when the socket closes. */
  accept(access: Access, release: () => void): void;
}

/** The WebSocket side of one server, whichever library carries it. */
export interface SocketSessions {
  /**
   * Admission: the path, RPC_WS_MAX_SOCKETS (sockets open and being admitted), the key, RPC_WS_MAX_SOCKETS_PER_CLIENT.
   */
  upgrade(head: RequestHead, u: Upgrade): void;
  /** One accepted socket served until it closes. */
  serve(peer: PeerSocket, access: Access): PeerEvents;
  /** Every socket closed (1001), any still open after 1 s dropped. */
  close(): Promise<void>;
}

/**
 * The sockets of one server: each one's cut-off (the total-buffered check closes the heaviest); `drained` is told when
 * none is left.
 */
interface SocketRegistry {
  o: WsServerOptions;
  m: WsMetrics;
  cutOffs: Map<PeerSocket, CutOff>;
  drained?: () => void;
}

export const POLICY_VIOLATION = 1008;
export const GOING_AWAY = 1001;
/** While a socket is not read (RPC_WS_MAX_INFLIGHT calls running), how often it is probed for a closed peer. */
const PAUSED_PROBE_MS = 250;

type WsMetrics = ReturnType<typeof wsMetrics>;
type CutOff = (code: number, reason: string, label: string) => void;

function wsMetrics(registry: Registry) {
  return {
    sockets: gauge(registry, 'l2stack_rpc_ws_sockets', 'Open WebSocket connections'),
    refused: counter(registry, 'l2stack_rpc_ws_refused_total', 'WebSocket upgrades refused, by reason', [
      'reason',
    ] as const),
    closed: counter(registry, 'l2stack_rpc_ws_closed_total', 'WebSocket connections closed by the server, by reason', [
      'reason',
    ] as const),
    messages: counter(registry, 'l2stack_rpc_ws_messages_total', 'JSON-RPC messages received over WebSocket'),
  };
}

/** Every 250 ms: when all sockets together queue more than the limit, the heaviest are cut off first. */
function watchTotalBuffered(limit: number, cutOffs: Map<PeerSocket, CutOff>): NodeJS.Timeout {
  const timer = setInterval(() => {
    let total = 0;
    for (const ws of cutOffs.keys()) total += ws.bufferedAmount;
    if (total <= limit) return;
    const heaviest = [...cutOffs.keys()].sort((a, b) => b.bufferedAmount - a.bufferedAmount);
    for (const ws of heaviest) {
      if (total <= limit || ws.bufferedAmount === 0) break;
      total -= ws.bufferedAmount;
      cutOffs.get(ws)?.(
        POLICY_VIOLATION,
        `too slow: all sockets' queue over ${limit} bytes (RPC_WS_MAX_TOTAL_BUFFERED_BYTES), this one held most`,
        'total',
      );
    }
  }, 250);
  timer.unref();
  return timer;
}

/**
 * A client's slot of RPC_WS_MAX_SOCKETS_PER_CLIENT: the refusal when it is full (the descriptor is the connection's,
 * taken when it was accepted).
 */
function socketSlots(limits: WsLimits) {
  const perClient = new ClientQuota(limits.maxSocketsPerClient);
  const perClientMessage = `too many WebSocket connections from this client: at most ${limits.maxSocketsPerClient} (RPC_WS_MAX_SOCKETS_PER_CLIENT), subscribed or not; close one or use HTTP`;
  return {
    hold(client: string): Refusal | (() => void) {
      if (!perClient.take(client))
        return { status: 429, reason: 'client_sockets', message: perClientMessage, retryAfterSeconds: 1 };
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        perClient.release(client);
      };
    },
  };
}

/**
 * JSON-RPC over WebSocket on the HTTP port (upgrade on `/` or `/v1/<key>`), whichever library carries it:
 * each text message is answered like a POST body (same validation, allow-list, rate limit, batch and byte
 * limits), and subscriptions push notifications. Bounded per server (sockets, bytes queued in all), per
 * client (sockets) and per socket: calls in flight (reading pauses), subscriptions, bytes queued for a client
 * that does not read (it is cut off with 1008 and the reason), idle time, dead peers (ping).
 */
export function socketSessions(o: WsServerOptions): SocketSessions {
  const m = wsMetrics(o.metrics);
  const registry: SocketRegistry = { o, m, cutOffs: new Map() };
  const totalCheck = watchTotalBuffered(o.limits.maxTotalBufferedBytes, registry.cutOffs);
  const slots = socketSlots(o.limits);
  let admitting = 0;
  const refuse = (u: Upgrade, r: Refusal) => {
    m.refused.inc({ reason: r.reason });
    u.refuse(r);
  };
  const decided = (u: Upgrade, decision: AccessDecision) => {
    if (u.gone()) return;
    if (!decision.ok)
      return refuse(u, {
        status: decision.status,
        reason: decision.status === 429 ? 'key_failures' : 'key',
        message: decision.message,
        retryAfterSeconds: decision.retryAfterSeconds,
      });
    const held = slots.hold(decision.access.client);
    if (typeof held !== 'function') return refuse(u, held);
    u.accept(decision.access, held);
  };
  return {
    upgrade(head, u) {
      if (!isRpcPath(head.url))
        return refuse(u, {
          status: 404,
          reason: 'path',
          message: `WebSocket is served on / (or /v1/<key>) only, not ${head.url.split('?')[0]}`,
        });
      if (registry.cutOffs.size + admitting >= o.limits.maxSockets) {
        return refuse(u, {
          status: 503,
          reason: 'sockets',
          message: `too many WebSocket connections: at most ${o.limits.maxSockets} (RPC_WS_MAX_SOCKETS); retry later or use HTTP`,
        });
      }
      admitting++;
      Promise.resolve(o.admit(head))
        .then(
          (decision) => decided(u, decision),
          (err: unknown) => {
            o.logger.error({ err }, 'websocket admission failed');
            if (!u.gone())
              refuse(u, {
                status: 503,
                reason: 'error',
                message: 'the endpoint could not check this connection; retry',
              });
          },
        )
        .finally(() => admitting--);
    },
    serve: (peer, access) => serveSocket(peer, access, registry),
    async close() {
      clearInterval(totalCheck);
      const open = [...registry.cutOffs.keys()];
      for (const peer of open) peer.close(GOING_AWAY, 'server shutting down');
      if (open.length > 0)
        await new Promise<void>((resolve) => ((registry.drained = resolve), setTimeout(resolve, 1_000).unref()));
      for (const peer of [...registry.cutOffs.keys()]) peer.terminate();
    },
  };
}

/** One accepted socket: its session, its cut-off, its keep-alive and its reading, until it closes. */
function serveSocket(ws: PeerSocket, access: Access, registry: SocketRegistry): PeerEvents {
  const { o, m, cutOffs } = registry;
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
        cutOff(
          POLICY_VIOLATION,
          `client too slow: over ${o.limits.maxBufferedBytes} bytes queued (RPC_WS_MAX_BUFFERED_BYTES)`,
          'slow',
        );
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
      if (cutOffs.size === 0) registry.drained?.();
    },
  };
}

/**
 * Pings the peer (cut off when it did not answer the last ping: `answered` reports and resets that) and
 * closes a socket idle with no subscription.
 */
function keepAlive(
  ws: PeerSocket,
  session: SocketSession,
  limits: WsLimits,
  cutOff: CutOff,
  activity: { lastActive: number },
  answered: () => boolean,
): NodeJS.Timeout {
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
function readMessages(
  ws: PeerSocket,
  session: SocketSession,
  o: WsServerOptions,
  m: WsMetrics,
  activity: { lastActive: number },
): { message(text: string): void; stop(): void } {
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
