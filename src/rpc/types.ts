/**
 * The types every layer of the endpoint shares, at the bottom of the pipe (test/architecture/layers.ts, RPC_LAYERS):
 * what one call carries besides its params, what it answers, and what a transport hands calls to. Nothing here
 * imports anything above the bottom layer, so any file may import it without making a cycle.
 */
import type { Quantity, RpcMethodMap, RpcMethodName } from '../../generated/rpc/methods.js';
import type { WireError } from './errors.js';
import type { ResponseBudget } from './response-budget.js';
import type { RawJson } from './upstream/raw-json.js';

/**
 * A value now, or a promise of it. The hot path (a head-served or cached call) is answered without an await
 * where nothing waits: each await costs a microtask, a promise and its garbage, ~0.5 µs per level, and a small
 * call went through eight of them (docs/figures.md, "The hot path without awaits").
 */
export type Awaitable<T> = T | Promise<T>;

/** `next` applied to `value` now when it is a value, once it settles when it is a promise. */
export function andThen<T, U>(value: Awaitable<T>, next: (v: T) => Awaitable<U>): Awaitable<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/** A number (block, gas, fee) as the spec's Quantity: 0x-prefixed hex without leading zeros. */
export const quantity = (n: bigint): Quantity => `0x${n.toString(16)}`;

/**
 * One call's outcome as the envelope encodes it: a result (parsed, or the node's text as RawJson) or an error object.
 */
export type CallResult = { result: unknown } | { error: WireError };

/**
 * What eth_subscribe / eth_unsubscribe reach through a call's scope when the call came over a WebSocket
 * (over HTTP there is none, and they answer that a socket is needed). ws/calls.ts makes one per socket.
 */
export interface SocketSubscriptions {
  subscribe(kind: string, filter: unknown, options: unknown): Promise<string>;
  unsubscribe(id: string): boolean;
}

/** What one call carries besides its params: who sent it and the byte budget of its reply. */
export interface CallScope {
  /** The rate limiter's client identity (socket address or trusted X-Forwarded-For hop). */
  client?: string;
  budget?: ResponseBudget;
  /** The WebSocket the call came over (eth_subscribe binds subscriptions to it); absent over HTTP. */
  socket?: SocketSubscriptions;
}

/**
 * Where a transport sends each call of a body: the dispatcher itself, or a wrapper around it (a key's
 * allow-list, a socket's scope). The envelope knows nothing else of what answers.
 */
export interface CallTarget {
  call(method: string, params: unknown, scope?: CallScope): Awaitable<CallResult>;
}

/** Positional params of method N as specs/rpc.openrpc.json declares them (a labelled tuple). */
export type MethodParams<N extends RpcMethodName> = RpcMethodMap[N]['params'];
/** The result of method N as the spec declares it. */
export type MethodResult<N extends RpcMethodName> = RpcMethodMap[N]['result'];
/**
 * What a handler may answer: the spec's result, parsed or as the node wrote it (never parsed, upstream/raw-json.ts).
 */
export type MethodAnswer<N extends RpcMethodName> = MethodResult<N> | RawJson<MethodResult<N>>;
