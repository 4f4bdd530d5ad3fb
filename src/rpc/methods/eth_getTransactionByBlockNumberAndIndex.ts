import { RpcError } from '../../common/errors.js';
import { defineMethod } from '../context.js';

/**
 * eth_getTransactionByBlockNumberAndIndex: null past the block's last index and for unknown blocks. Some
 * nodes answer an out-of-range index with an error instead; that is turned into null too.
 */
export default defineMethod('eth_getTransactionByBlockNumberAndIndex', async (ctx, params) => {
  try {
    return (await ctx.upstream.request('eth_getTransactionByBlockNumberAndIndex', params)) ?? null;
  } catch (err) {
    if (!(err instanceof RpcError)) throw err;
    const count = (await ctx.upstream.request('eth_getBlockTransactionCountByNumber', [params[0]])) as string | null;
    if (count === null || BigInt(params[1] as string) >= BigInt(count)) return null;
    throw err;
  }
});
