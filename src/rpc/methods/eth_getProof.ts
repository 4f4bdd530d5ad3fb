import { defineMethod, passThrough } from '../context.js';
import { toStorageWord } from '../params/storage-keys.js';

const forward = passThrough('eth_getProof', { blockAt: 2 });

/**
 * eth_getProof: answered by the upstream node as it is (params validated against the spec first). The
 * block defaults to latest and keys shorter than 32 bytes are left-padded, as the execution-apis allow,
 * because anvil insists on both.
 */
export default defineMethod('eth_getProof', (ctx, params, call) => {
  const [address, keys, ...rest] = params as [string, string[], ...unknown[]];
  return forward.handler(ctx, [address, keys.map(toStorageWord), ...rest], call);
});
