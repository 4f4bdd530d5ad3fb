import { RpcError } from '../../common/errors.js';
import { RpcCodes } from '../errors.js';
import type { CallTarget, MethodParams, SocketSubscriptions } from '../types.js';
import type { RateLimiter } from '../ratelimit.js';
import { LogFilterError, parseLogFilter } from './log-filter.js';
import type { SubscriptionHub } from './hub.js';
import { SubscribeError, type ResumeCharge, type ResumePoint, type SubscriptionKind } from './types.js';
import type { SocketSession } from '../transport/session.js';
import type { ClientLedger } from './ledger.js';

export interface SubscriptionLimits {
  /** RPC_MAX_FILTER_ADDRESSES / RPC_MAX_FILTER_TOPICS: one filter. */
  maxAddresses: number;
  maxTopics: number;
  /** RPC_RATE_LIMIT_BYTES_PER_UNIT: what a resume's reads cost, as an HTTP answer's bytes do. */
  bytesPerUnit: number;
}

const invalid = (message: string) => new RpcError(RpcCodes.InvalidParams, `invalid params: ${message}`);

/**
 * The subscription options' resume point: { resumeAfter: { blockNumber, blockHash, logIndex? } } (spec:
 * SubscriptionOptions).
 */
function resumePoint(options: unknown): ResumePoint | undefined {
  const r = (options as MethodParams<'eth_subscribe'>[2] | null)?.resumeAfter;
  if (!r) return undefined;
  return {
    blockNumber: BigInt(r.blockNumber),
    blockHash: r.blockHash,
    logIndex: r.logIndex === undefined ? undefined : BigInt(r.logIndex),
  };
}

/**
 * A resume pays for its reads like HTTP calls: 1 unit per node call and 1 per `bytesPerUnit` bytes read,
 * debited as it goes; once the client's bucket is empty the resume ends with -32005 (what HTTP answers 429).
 */
function resumeCharge(limiter: RateLimiter, client: string, bytesPerUnit: number): ResumeCharge {
  let calls = 0;
  let bytes = 0;
  let spare = 0;
  return async (n, size) => {
    calls += n;
    bytes += size;
    spare += size;
    const byBytes = bytesPerUnit > 0 ? Math.floor(spare / bytesPerUnit) : 0;
    if (bytesPerUnit > 0) spare %= bytesPerUnit;
    await limiter.charge(client, n + byBytes);
    const left = await limiter.take(client, 0);
    if (!left.ok) {
      throw new SubscribeError(
        `rate limit exceeded: a resume costs 1 unit per node call and 1 per ${bytesPerUnit} bytes it reads (RPC_RATE_LIMIT_BYTES_PER_UNIT), and this client is over its ${left.limitPerSecond} units per second, burst ${left.burst} (RPC_RATE_LIMIT_PER_SECOND); this resume had read ${bytes} bytes in ${calls} node calls. Retry in ${left.retryAfterSeconds} s, from a later point`,
        RpcCodes.LimitExceeded,
        { retryAfterSeconds: left.retryAfterSeconds },
      );
    }
  };
}

/** Binds eth_subscribe / eth_unsubscribe to one socket: its subscriptions, its caps, its notification sink. */
export function socketSubscriptions(
  hub: SubscriptionHub,
  session: SocketSession,
  ledger: ClientLedger,
  limits: SubscriptionLimits,
): SocketSubscriptions {
  return {
    async subscribe(kind, filter, options) {
      if (kind !== 'logs' && filter !== undefined && filter !== null)
        throw invalid(`${kind} takes no filter: pass null as the second param (options go third)`);
      let parsed;
      try {
        parsed = kind === 'logs' ? parseLogFilter(filter as MethodParams<'eth_subscribe'>[1], limits) : undefined;
      } catch (err) {
        if (err instanceof LogFilterError) throw invalid(err.message);
        throw err;
      }
      // Counted now, before any await: a resume that is still replaying holds its place under the caps.
      const slot = ledger.reserve(session, parsed?.addresses?.length ?? 0);
      const resumeAfter = resumePoint(options);
      try {
        const subscribe = () =>
          hub.subscribe(kind as SubscriptionKind, session.sink, {
            filter: parsed,
            resumeAfter,
            signal: session.closed,
            charge: resumeAfter ? resumeCharge(session.access.limiter, session.client, limits.bytesPerUnit) : undefined,
            onEnd: (id) => {
              slot.release();
              session.subscriptions.delete(id);
            },
          });
        // A client's resumes replay one at a time, so what they hold in memory is one at a time too.
        const id = resumeAfter ? await ledger.oneAtATime(session.client, subscribe) : await subscribe();
        if (!slot.released) session.subscriptions.add(id);
        return id;
      } catch (err) {
        slot.release();
        if (err instanceof SubscribeError) throw new RpcError(err.code, err.message, err.data);
        throw err;
      }
    },
    unsubscribe(id) {
      return session.subscriptions.has(id) && hub.unsubscribe(id);
    },
  };
}

/** The endpoint's dispatcher as one socket's messages see it: every call's scope carries the socket. */
export function socketCalls(socket: SocketSubscriptions, next: CallTarget): CallTarget {
  return { call: (method, params, scope = {}) => next.call(method, params, { ...scope, socket }) };
}
