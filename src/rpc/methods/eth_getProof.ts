import { defineMethod, upstreamAnswer } from '../context.js';
import { toStorageWord } from '../params/storage-keys.js';

/**
 * eth_getProof: answered by the upstream node as it is (params validated against the spec first). The
 * block defaults to latest and keys shorter than 32 bytes are left-padded, as the execution-apis allow,
 * because anvil insists on both.
 */
export default defineMethod('eth_getProof', (ctx, [address, keys, ...block], call) =>
  upstreamAnswer(ctx, 'eth_getProof', [address, keys.map(toStorageWord), ...block], call, { blockAt: 2 }),
);
