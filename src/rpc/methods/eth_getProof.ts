import { defineMethod, upstreamAnswer } from '../context.js';
import { echoSentKeys, keysAsForwarded, toStorageWord } from '../params/storage-keys.js';
import { andThen, type MethodResult } from '../types.js';
import type { RawJson } from '../upstream/raw-json.js';

/**
 * eth_getProof: answered by the upstream node (params validated against the spec first). The block defaults to latest
 * and keys shorter than 32 bytes are left-padded, as the execution-apis allow, because anvil insists on both; the
 * answer then carries each key as geth writes back the key the client sent (`0x0` stays `0x0`: echoSentKeys). Keys sent
 * as lower-case 32-byte words need no change: the node's bytes are passed on unparsed.
 */
export default defineMethod('eth_getProof', (ctx, [address, keys, ...block], call) => {
  const answer = upstreamAnswer(ctx, 'eth_getProof', [address, keys.map(toStorageWord), ...block], call);
  if (keysAsForwarded(keys)) return answer;
  return andThen(answer, (raw: RawJson<MethodResult<'eth_getProof'>>) =>
    echoSentKeys(raw.value as MethodResult<'eth_getProof'>, keys),
  );
});
