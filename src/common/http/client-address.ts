import type { IncomingMessage } from 'node:http';
import type { RequestHead } from './request-head.js';
import { commaList } from '../config/env.js';

/**
 * The client a rate limit applies to: the socket address, or the address `hops` trusted proxies back in
 * X-Forwarded-For (each proxy appends the address it saw, so the entry `hops` from the end is the first one
 * a trusted proxy wrote; anything before it is the client's own claim and is not believed).
 */
export function clientAddress(req: IncomingMessage, hops: number): string {
  const header = hops === 0 ? undefined : req.headers['x-forwarded-for'];
  const forwardedFor = Array.isArray(header) ? header.join(',') : header;
  return forwardedClient(req.socket.remoteAddress ?? 'unknown', forwardedFor, hops);
}

/** clientAddress of a RequestHead (request-head.ts): any HTTP stack's request. */
export const headClientAddress = (head: RequestHead, hops: number): string =>
  forwardedClient(head.remoteAddress, hops === 0 ? undefined : head.header('x-forwarded-for'), hops);

function forwardedClient(socket: string, forwardedFor: string | undefined, hops: number): string {
  if (hops === 0) return socket;
  const chain = [...commaList(forwardedFor ?? ''), socket];
  return chain[Math.max(0, chain.length - 1 - hops)]!;
}
