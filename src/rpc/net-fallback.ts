import { RpcError } from '../common/errors.js';
import type { RpcContext } from './context.js';

/** The node's answer that it does not serve a method (its own words vary: -32601, -32004, or a message). */
export const notServed = (err: unknown) =>
  err instanceof RpcError &&
  (err.code === -32601 ||
    err.code === -32004 ||
    /method .*(not found|not supported|does not exist|not available)/i.test(err.message));

/**
 * A net_ method asked of the node, or `fallback` when the node does not serve it (anvil 1.7 has no
 * net_peerCount; other development nodes lack net_listening). Once a node said so, it is not asked again.
 */
export async function netAnswer<T>(
  ctx: RpcContext,
  method: 'net_listening' | 'net_peerCount',
  fallback: T,
): Promise<T> {
  if (!ctx.upstream.isSupported(method)) return fallback;
  try {
    return (await ctx.upstream.request(method, [])) as T;
  } catch (err) {
    if (!notServed(err)) throw err;
    ctx.upstream.markUnsupported(method);
    ctx.logger.info({ method }, 'the upstream does not serve this net_ method; answering the fallback');
    return fallback;
  }
}
