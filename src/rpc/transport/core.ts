import type { Registry } from 'prom-client';
import { headClientAddress } from '../../common/http/client-address.js';
import type { RequestHead } from '../../common/http/request-head.js';
import type { Logger } from '../../common/log.js';
import type { ClientQuota } from '../../common/http/client-quota.js';
import { slotCounter } from '../../common/metric-slots.js';
import { andThen, type Awaitable, type CallTarget } from '../types.js';
import { errorBody, handleBody, type HttpAnswer, type Reply } from '../envelope.js';
import { RpcCodes } from '../errors.js';
import { allowListCalls, requestKey, type Access, type AccessDecision, type KeyAccess } from '../keys/access.js';
import { replyCost, type RateLimiter } from '../ratelimit.js';
import { ResponseBudget } from '../response-budget.js';

/** What a body's answer needs, whichever stack carries it (node/: node:http and ws; uws/: uWebSockets.js). */
export interface CoreOptions {
  dispatcher: CallTarget;
  limiter: RateLimiter;
  maxBatch: number;
  maxBodyBytes: number;
  /** RPC_MAX_RESPONSE_BYTES: byte budget of one reply (response-budget.ts). */
  maxResponseBytes: number;
  /**
   * RPC_RATE_LIMIT_BYTES_PER_UNIT: answers are charged to the client's bucket after the reply (ratelimit.ts);
   * RPC_RATE_LIMIT_MS_PER_UNIT: and so is the time its calls kept the node executing (evm-bounds.ts).
   */
  replyCosts: { bytesPerUnit: number; msPerUnit: number };
  trustedProxyHops: number;
  /** RPC_MAX_JSON_DEPTH (envelope.ts). */
  maxJsonDepth: number;
  metrics: Registry;
  logger: Logger;
  /** RPC_MAX_INFLIGHT_PER_CLIENT, one count over POST and WebSocket calls (envelope.ts); absent: no per-client cap. */
  inflight?: ClientQuota;
  /**
   * API keys (POST /v1/<key> or x-api-key): their own limits and allow-lists; without it every request is anonymous.
   */
  access?: KeyAccess;
}

/**
 * Writes one reply on the transport: to the request `x` (its head and whatever the transport needs to answer
 * it), status, body (undefined: none) and any extra headers. Made once per server: a request carries its own
 * state in `x`, so nothing is allocated per request to answer it.
 */
export type ReplySink<X> = (x: X, status: number, body: Reply | undefined, headers?: Record<string, string>) => void;

/**
 * POST / and /v1/<key> once the body is read (undefined: it was over RPC_MAX_BODY_BYTES). An anonymous call
 * answered without waiting (the head, a cache hit) is written before this returns; otherwise the returned
 * promise settles after the reply.
 */
export type PostCore<X extends RequestHead> = (x: X, text: string | undefined) => Awaitable<void>;

/**
 * The transport-neutral endpoint: who sends a request, and one body answered; both adapters and both protocols go
 * through it.
 */
export interface TransportCore {
  /** Who a request (a POST, a WebSocket upgrade) is for: its key's lookup when it names one, else its address. */
  admit(head: RequestHead): Awaitable<AccessDecision>;
  /** The dispatcher as an access sees it (its key's allow-list). */
  target(access: Access): CallTarget;
  /** One body (a POST's, a WebSocket message): the response budget, the envelope, then the answer's charge. */
  answer(text: string, client: string, limiter: RateLimiter, target: CallTarget): Awaitable<HttpAnswer>;
  /** POST's handling on a transport's reply sink: 413, the key's refusal, or the answer, each counted by status. */
  post<X extends RequestHead>(sink: ReplySink<X>): PostCore<X>;
}

export function transportCore(o: CoreOptions): TransportCore {
  const tooLarge = errorBody(
    RpcCodes.InvalidRequest,
    `invalid request: the body is larger than ${o.maxBodyBytes} bytes (RPC_MAX_BODY_BYTES)`,
    { limit: o.maxBodyBytes },
  );

  const answer: TransportCore['answer'] = (text, client, limiter, target) => {
    const budget = new ResponseBudget(o.maxResponseBytes);
    return andThen(
      handleBody(text, target, {
        maxBatch: o.maxBatch,
        maxJsonDepth: o.maxJsonDepth,
        client,
        budget,
        limiter,
        inflight: o.inflight,
      }),
      (reply) => {
        // Charged before the reply leaves, so this client's next request already sees the cost of this one.
        const extra = replyCost(budget, o.replyCosts);
        if (extra === 0) return reply;
        return limiter
          .charge(client, extra)
          .catch((err: unknown) => o.logger.warn({ err }, 'rate-limit charge failed'))
          .then(() => reply);
      },
    );
  };
  const admit = (head: RequestHead): Awaitable<AccessDecision> => {
    const address = headClientAddress(head, o.trustedProxyHops);
    return o.access ? o.access.resolve(head, address) : { ok: true, access: { client: address, limiter: o.limiter } };
  };
  const target = ({ allowed, keyId }: Access): CallTarget =>
    allowed ? allowListCalls(allowed, keyId!, o.dispatcher) : o.dispatcher;

  const post = <X extends RequestHead>(sink: ReplySink<X>): PostCore<X> => {
    const http = slotCounter(
      o.metrics,
      'l2stack_rpc_http_requests_total',
      'HTTP requests to the JSON-RPC route by status',
      ['status'],
    );
    const ok = http.child('200');
    const send = (x: X, a: HttpAnswer) => {
      if (a.status === 200) ok.inc();
      else http.inc([String(a.status)]);
      sink(x, a.status, a.body, a.headers);
    };
    /** A request naming a key: its lookup (access.ts), then its client, limiter and allow-list. */
    const withKey = (x: X, text: string) =>
      andThen(admit(x), (decision) => {
        if (decision.ok)
          return andThen(answer(text, decision.access.client, decision.access.limiter, target(decision.access)), (a) =>
            send(x, a),
          );
        const headers =
          decision.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(decision.retryAfterSeconds) };
        send(x, { status: decision.status, body: errorBody(decision.code, decision.message, decision.data), headers });
      });
    return (x, text) => {
      if (text === undefined) return send(x, { status: 413, body: tooLarge, headers: { connection: 'close' } });
      // Anonymous requests (no key in the path or header: nearly all) need no lookup and no await.
      if (o.access && requestKey(x).kind !== 'none') return withKey(x, text);
      return andThen(answer(text, headClientAddress(x, o.trustedProxyHops), o.limiter, o.dispatcher), (a) =>
        send(x, a),
      );
    };
  };
  return { admit, target, answer, post };
}
