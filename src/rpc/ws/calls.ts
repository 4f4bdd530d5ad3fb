import { RpcError } from '../../common/errors.js';
import { RpcCodes } from '../errors.js';
import type { CallResult } from '../dispatcher.js';
import type { CallScope } from '../context.js';
import { LogFilterError, parseLogFilter } from './log-filter.js';
import { SubscribeError, type ResumePoint, type SubscriptionHub, type SubscriptionKind } from './hub.js';
import type { SocketSession } from './socket-server.js';

/**
 * What eth_subscribe / eth_unsubscribe reach through a call's scope when the call came over a WebSocket
 * (over HTTP there is none, and they answer that a socket is needed). Params arrive validated by the spec.
 */
export interface SocketSubscriptions {
  subscribe(kind: string, filter: unknown, options: unknown): Promise<string>;
  unsubscribe(id: string): boolean;
}

const invalid = (message: string) => new RpcError(RpcCodes.InvalidParams, `invalid params: ${message}`);

/** The subscription options' resume point: { resumeAfter: { blockNumber, blockHash, logIndex? } } (spec: SubscriptionOptions). */
function resumePoint(options: unknown): ResumePoint | undefined {
  const r = (options as { resumeAfter?: { blockNumber: string; blockHash: string; logIndex?: string } } | null | undefined)?.resumeAfter;
  if (!r) return undefined;
  return { blockNumber: BigInt(r.blockNumber), blockHash: r.blockHash, logIndex: r.logIndex === undefined ? undefined : BigInt(r.logIndex) };
}

/** Binds eth_subscribe / eth_unsubscribe to one socket: its subscriptions, its cap, its notification sink. */
export function socketSubscriptions(hub: SubscriptionHub, session: SocketSession, limits: { maxAddresses: number; maxTopics: number }): SocketSubscriptions {
  return {
    async subscribe(kind, filter, options) {
      if (kind !== 'logs' && filter !== undefined && filter !== null) throw invalid(`${kind} takes no filter: pass null as the second param (options go third)`);
      let parsed;
      try {
        parsed = kind === 'logs' ? parseLogFilter(filter, limits) : undefined;
      } catch (err) {
        if (err instanceof LogFilterError) throw invalid(err.message);
        throw err;
      }
      if (session.subscriptions.size >= session.maxSubscriptions) {
        throw new RpcError(RpcCodes.LimitExceeded, `too many subscriptions on this socket: at most ${session.maxSubscriptions} (RPC_WS_MAX_SUBSCRIPTIONS)`, { limit: session.maxSubscriptions });
      }
      try {
        const id = await hub.subscribe(kind as SubscriptionKind, session.sink, { filter: parsed, resumeAfter: resumePoint(options) });
        session.subscriptions.add(id);
        return id;
      } catch (err) {
        if (err instanceof SubscribeError) throw new RpcError(err.code, err.message, err.data);
        throw err;
      }
    },
    unsubscribe(id) {
      return session.subscriptions.delete(id) && hub.unsubscribe(id);
    },
  };
}

/** The endpoint's dispatcher as one socket's messages see it: every call's scope carries the socket. */
export function socketCalls(
  socket: SocketSubscriptions,
  next: (method: string, params: unknown, scope: CallScope & { socket: SocketSubscriptions }) => Promise<CallResult>,
): { call(method: string, params: unknown, scope?: CallScope): Promise<CallResult> } {
  return { call: (method, params, scope = {}) => next(method, params, { ...scope, socket }) };
}
