import type { IncomingMessage } from 'node:http';

/**
 * The client a rate limit applies to: the socket address, or the address `hops` trusted proxies back in
 * X-Forwarded-For (each proxy appends the address it saw, so the entry `hops` from the end is the first one
 * a trusted proxy wrote; anything before it is the client's own claim and is not believed).
 */
export function clientAddress(req: IncomingMessage, hops: number): string {
  const socket = req.socket.remoteAddress ?? 'unknown';
  if (hops === 0) return socket;
  const header = req.headers['x-forwarded-for'];
  const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').map((s) => s.trim()).filter(Boolean);
  const chain = [...forwarded, socket];
  return chain[Math.max(0, chain.length - 1 - hops)]!;
}
