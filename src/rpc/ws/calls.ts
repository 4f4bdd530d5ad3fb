import { RpcCodes, type WireError } from '../errors.js';
import type { CallResult } from '../dispatcher.js';
import type { CallScope } from '../context.js';
import { LogFilterError, parseLogFilter } from './log-filter.js';
import { SubscribeError, type ResumePoint, type SubscriptionHub, type SubscriptionKind } from './hub.js';
import type { SocketSession } from './socket-server.js';

const KINDS: readonly SubscriptionKind[] = ['newHeads', 'logs', 'newPendingTransactions'];
const HASH = /^0x[0-9a-fA-F]{64}$/;
const QUANTITY = /^0x(0|[1-9a-fA-F][0-9a-fA-F]{0,15})$/;

const invalid = (message: string): CallResult => ({ error: { code: RpcCodes.InvalidParams, message: `invalid params: ${message}` } });

/** The optional third param of eth_subscribe: { resumeAfter: { blockNumber, blockHash, logIndex? } }. */
function parseResume(raw: unknown): ResumePoint | undefined | string {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw)) return 'the subscription options must be an object, e.g. {"resumeAfter": {...}}';
  const { resumeAfter, ...rest } = raw as { resumeAfter?: unknown };
  if (Object.keys(rest).length > 0) return `unknown subscription option "${Object.keys(rest)[0]}" (only resumeAfter)`;
  if (resumeAfter === undefined) return undefined;
  if (resumeAfter === null || typeof resumeAfter !== 'object') return 'resumeAfter must be an object {blockNumber, blockHash, logIndex?}';
  const r = resumeAfter as { blockNumber?: unknown; blockHash?: unknown; logIndex?: unknown };
  if (typeof r.blockNumber !== 'string' || !QUANTITY.test(r.blockNumber)) return 'resumeAfter.blockNumber must be a hex quantity (the blockNumber of the last item you processed)';
  if (typeof r.blockHash !== 'string' || !HASH.test(r.blockHash)) return 'resumeAfter.blockHash must be a 32-byte hex hash (the blockHash of the last item you processed)';
  if (r.logIndex !== undefined && (typeof r.logIndex !== 'string' || !QUANTITY.test(r.logIndex))) return 'resumeAfter.logIndex must be a hex quantity';
  return { blockNumber: BigInt(r.blockNumber), blockHash: r.blockHash, logIndex: r.logIndex === undefined ? undefined : BigInt(r.logIndex) };
}

/**
 * eth_subscribe and eth_unsubscribe, bound to one socket: [kind, filter?, options?] → a subscription id.
 * Everything else goes to the endpoint's dispatcher unchanged.
 */
export function socketCalls(
  hub: SubscriptionHub,
  session: SocketSession,
  limits: { maxAddresses: number; maxTopics: number },
  next: (method: string, params: unknown, scope: CallScope) => Promise<CallResult>,
): { call(method: string, params: unknown, scope?: CallScope): Promise<CallResult> } {
  return {
    async call(method, params, scope = {}) {
      if (method === 'eth_subscribe') return subscribe(params);
      if (method === 'eth_unsubscribe') {
        if (!Array.isArray(params) || params.length !== 1 || typeof params[0] !== 'string') return invalid('eth_unsubscribe takes [subscriptionId]');
        const id = params[0];
        const mine = session.subscriptions.delete(id);
        return { result: mine && hub.unsubscribe(id) };
      }
      return next(method, params, scope);
    },
  };

  async function subscribe(params: unknown): Promise<CallResult> {
    if (!Array.isArray(params) || params.length < 1 || params.length > 3) return invalid('eth_subscribe takes [kind, filter?, options?]');
    const [kind, filter, options] = params as [unknown, unknown, unknown];
    if (typeof kind !== 'string' || !(KINDS as readonly string[]).includes(kind)) return invalid(`the subscription kind must be one of ${KINDS.join(', ')}, got ${JSON.stringify(kind)?.slice(0, 40)}`);
    if (kind !== 'logs' && filter !== undefined && filter !== null && !(kind === 'newHeads' && options === undefined && typeof filter === 'object')) {
      return invalid(`${kind} takes no filter`);
    }
    // newHeads may carry its options second (it has no filter): ["newHeads", {resumeAfter}].
    const resume = parseResume(kind === 'logs' ? options : (options ?? filter));
    if (typeof resume === 'string') return invalid(resume);
    let parsed;
    try {
      parsed = kind === 'logs' ? parseLogFilter(filter, limits) : undefined;
    } catch (err) {
      if (err instanceof LogFilterError) return invalid(err.message);
      throw err;
    }
    if (session.subscriptions.size >= session.maxSubscriptions) {
      return { error: { code: RpcCodes.LimitExceeded, message: `too many subscriptions on this socket: at most ${session.maxSubscriptions} (RPC_WS_MAX_SUBSCRIPTIONS)`, data: { limit: session.maxSubscriptions } } };
    }
    try {
      const id = await hub.subscribe(kind as SubscriptionKind, session.sink, { filter: parsed, resumeAfter: resume });
      session.subscriptions.add(id);
      return { result: id };
    } catch (err) {
      if (err instanceof SubscribeError) {
        const e: WireError = { code: err.code, message: err.message };
        if (err.data !== undefined) e.data = err.data;
        return { error: e };
      }
      throw err;
    }
  }
}
