import type { Registry } from 'prom-client';
import { headClientAddress } from '../../common/http/client-address.js';
import type { RequestHead } from '../../common/http/request-head.js';
import type { Logger } from '../../common/log.js';
import type { ClientQuota } from '../../common/http/client-quota.js';
import { slotCounter } from '../../common/metric-slots.js';
import { andThen, type Awaitable, type CallTarget } from '../types.js';
import { errorBody, handleBody, type Reply } from '../envelope.js';
import { RpcCodes } from '../errors.js';
import { allowListCalls, requestKey, type KeyAccess } from '../keys/access.js';
import { replyCost, type RateLimiter } from '../ratelimit.js';
import { ResponseBudget } from '../response-budget.js';

/** What POST / needs, whichever HTTP stack carries it (server.ts: node:http; uws-server.ts: uWebSockets.js). */
export interface PostOptions {
  dispatcher: CallTarget;
  limiter: RateLimiter;
  maxBatch: number;
  maxBodyBytes: number;
  /** RPC_MAX_RESPONSE_BYTES: byte budget of one reply (response-budget.ts). */
  maxResponseBytes?: number;
  /** RPC_RATE_LIMIT_BYTES_PER_UNIT: answers are charged to the client's bucket after the reply (ratelimit.ts). */
  rateLimitBytesPerUnit?: number;
  /** RPC_RATE_LIMIT_MS_PER_UNIT: and so is the time its calls kept the node executing (evm-bounds.ts). */
  rateLimitMsPerUnit?: number;
  trustedProxyHops: number;
  /** RPC_MAX_JSON_DEPTH (envelope.ts); undefined: the envelope's default. */
  maxJsonDepth?: number;
  metrics: Registry;
  logger: Logger;
  /** RPC_MAX_INFLIGHT_PER_CLIENT, shared with the WebSocket side (envelope.ts); absent: no per-client cap. */
  inflight?: ClientQuota;
  /** API keys (POST /v1/<key> or x-api-key): their own limits and allow-lists; without it every request is anonymous. */
  access?: KeyAccess;
}

/**
 * Writes one reply on the transport: to the request `x` (its head and whatever the transport needs to answer
 * it), status, body (undefined: none) and any extra headers. Made once per server: a request carries its own
 * state in `x`, so nothing is allocated per request to answer it.
 */
export type ReplySink<X> = (x: X, status: number, body: Reply | undefined, headers?: Record<string, string>) => void;

/**
 * POST / and /v1/<key> once the body is read (undefined: it was over RPC_MAX_BODY_BYTES): who sends it (its
 * key, if any), the envelope, the reply's charge, the reply. An anonymous call answered without waiting (the
 * head, a cache hit) is written before this returns; otherwise the returned promise settles after the reply.
 */
export type PostCore<X extends RequestHead> = (x: X, text: string | undefined) => Awaitable<void>;

export function postCore<X extends RequestHead>(o: PostOptions, sink: ReplySink<X>): PostCore<X> {
  const maxResponseBytes = o.maxResponseBytes ?? 10_485_760;
  const costs = { bytesPerUnit: o.rateLimitBytesPerUnit ?? 0, msPerUnit: o.rateLimitMsPerUnit };
  const http = slotCounter(o.metrics, 'l2stack_rpc_http_requests_total', 'HTTP requests to the JSON-RPC route by status', ['status']);
  const ok = http.child('200');
  /** The sink, each reply counted by its status. */
  const send: ReplySink<X> = (x, status, body, headers) => {
    if (status === 200) ok.inc();
    else http.inc([String(status)]);
    sink(x, status, body, headers);
  };

  const reply = (x: X, text: string, client: string, limiter: RateLimiter, target: CallTarget): Awaitable<void> => {
    const budget = new ResponseBudget(maxResponseBytes);
    return andThen(handleBody(text, target, { maxBatch: o.maxBatch, maxJsonDepth: o.maxJsonDepth, client, budget, limiter, inflight: o.inflight }), (answer) => {
      // Charged before the reply leaves, so this client's next request already sees the cost of this one.
      const extra = replyCost(budget, costs);
      if (extra === 0) return send(x, answer.status, answer.body, answer.headers);
      return limiter
        .charge(client, extra)
        .catch((err: unknown) => o.logger.warn({ err }, 'rate-limit charge failed'))
        .then(() => send(x, answer.status, answer.body, answer.headers));
    });
  };

  /** A request naming a key: the key's lookup (access.ts), then its client, limiter and allow-list. */
  const replyWithKey = async (x: X, text: string, address: string, access: KeyAccess): Promise<void> => {
    const decision = await access.resolve(x, address);
    if (!decision.ok) {
      const retry = decision.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(decision.retryAfterSeconds) };
      send(x, decision.status, errorBody(decision.code, decision.message, decision.data), retry);
      return;
    }
    const { client, limiter, allowed, keyId } = decision.access;
    await reply(x, text, client, limiter, allowed ? allowListCalls(allowed, keyId!, o.dispatcher) : o.dispatcher);
  };

  return (x, text) => {
    if (text === undefined) {
      send(x, 413, errorBody(RpcCodes.InvalidRequest, `invalid request: the body is larger than ${o.maxBodyBytes} bytes (RPC_MAX_BODY_BYTES)`, { limit: o.maxBodyBytes }), { connection: 'close' });
      return;
    }
    const address = headClientAddress(x, o.trustedProxyHops);
    // Anonymous requests (no key in the path or header: nearly all) need no lookup and no await.
    if (o.access && requestKey(x).kind !== 'none') return replyWithKey(x, text, address, o.access);
    return reply(x, text, address, o.limiter, o.dispatcher);
  };
}
