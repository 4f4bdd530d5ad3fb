import type { Registry } from 'prom-client';
import type { Logger } from '../../common/log.js';
import { counter, gauge } from '../../common/metrics.js';
import type { RpcConfig } from '../config.js';
import { replyText } from '../envelope.js';
import type { SocketSubscriptions } from '../types.js';
import type { TransportCore } from '../transport/core.js';
import type { SocketSession, WsServerOptions } from '../transport/session.js';
import { socketCalls, socketSubscriptions } from './calls.js';
import { SubscriptionHub } from './hub.js';
import type { HeadFeed, SubscriptionKind, UpstreamCall } from './types.js';
import { ClientLedger } from './ledger.js';

export interface StartWebSocketOptions {
  /** Serves sockets on the endpoint's HTTP port (transport/node/ws.ts or transport/uws/ws.ts). */
  attach(options: WsServerOptions): { close(): Promise<void> };
  config: RpcConfig;
  /** Admission and answers, the same as POST's (transport/core.ts). */
  core: TransportCore;
  feed: HeadFeed;
  upstream: UpstreamCall;
  metrics: Registry;
  logger: Logger;
}

/**
 * The endpoint's WebSocket side: one subscription hub fed by the upstream pool's head, and the socket
 * server on the HTTP port answering every message the way POST / does.
 */
export function startWebSocket(o: StartWebSocketOptions): { stop(): Promise<void> } {
  const limits = o.config.ws;
  const notifications = counter(
    o.metrics,
    'l2stack_rpc_ws_notifications_total',
    'Subscription notifications sent, by kind',
    ['kind'] as const,
  );
  const subscriptions = gauge(o.metrics, 'l2stack_rpc_ws_subscriptions', 'Live subscriptions, by kind', [
    'kind',
  ] as const);
  const logsReads = counter(
    o.metrics,
    'l2stack_rpc_ws_logs_reads_total',
    "The subscription hub's eth_getLogs per block, by outcome (ok, retry, split, failed)",
    ['outcome'] as const,
  );
  const logsEnded = counter(
    o.metrics,
    'l2stack_rpc_ws_logs_ended_total',
    'Logs subscriptions ended because the logs of a block could not be read from the node',
  );
  const hub = new SubscriptionHub({
    feed: o.feed,
    upstream: o.upstream,
    logger: o.logger,
    maxResumeBlocks: limits.maxResumeBlocks,
    pendingPollMs: limits.pendingPollMs,
    // RPC_HEAD_DEPTH: the deepest reorg whose logs can be reported as removed.
    logMemoryBlocks: o.config.headDepth,
    maxLogsRequestBytes: o.config.upstreamMaxBatchBytes,
    onLogsRead: (outcome) => logsReads.inc({ outcome }),
    onLogsEnded: (count) => logsEnded.inc(count),
    onNotification: (kind: SubscriptionKind, count: number) => notifications.inc({ kind }, count),
    onChange: () => {
      for (const kind of ['newHeads', 'logs', 'newPendingTransactions'] as const)
        subscriptions.set({ kind }, hub.count(kind));
    },
  });
  hub.start();
  const bySession = new WeakMap<SocketSession, SocketSubscriptions>();
  const filterLimits = {
    maxAddresses: o.config.maxFilterAddresses,
    maxTopics: o.config.maxFilterTopics,
    bytesPerUnit: o.config.rateLimit.bytesPerUnit,
  };
  const ledger = new ClientLedger(limits);
  const sockets = o.attach({
    limits,
    maxMessageBytes: o.config.maxBodyBytes,
    admit: o.core.admit,
    unsubscribe: (id) => hub.unsubscribe(id),
    metrics: o.metrics,
    logger: o.logger,
    async answer(text, session) {
      let bound = bySession.get(session);
      if (!bound) bySession.set(session, (bound = socketSubscriptions(hub, session, ledger, filterLimits)));
      const answer = await o.core.answer(
        text,
        session.client,
        session.access.limiter,
        socketCalls(bound, o.core.target(session.access)),
      );
      // A WebSocket text frame: chunks (a node's large answer, envelope.ts) go back to a string here.
      return answer.body === undefined ? undefined : replyText(answer.body);
    },
  });
  return {
    async stop() {
      hub.stop();
      await sockets.close();
    },
  };
}
