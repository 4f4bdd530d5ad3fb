import { RpcError } from '../../common/errors.js';
import { defineMethod, upstreamCall } from '../context.js';

/**
 * eth_getTransactionByBlockNumberAndIndex: null past the block's last index and for unknown blocks. Some
 * nodes answer an out-of-range index with an error instead; that is turned into null too.
 */
export default defineMethod('eth_getTransactionByBlockNumberAndIndex', async (ctx, params) => {
  try {
    return (await upstreamCall(ctx, 'eth_getTransactionByBlockNumberAndIndex', params)) ?? null;
  } catch (err) {
    if (!(err instanceof RpcError)) throw err;
    const [block, index] = params;
    const count = await upstreamCall(ctx, 'eth_getBlockTransactionCountByNumber', [block]);
    if (count === null || BigInt(index) >= BigInt(count)) return null;
    throw err;
  }
});
