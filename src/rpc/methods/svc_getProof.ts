import { RpcError } from '../../common/errors.js';
import { defineMethod } from '../context.js';
import { RpcCodes } from '../errors.js';

/**
 * svc_getProof: answered by the state manager passed to startRpc (ProofBackend); its RpcErrors (block not
 * finalized, state not retained) reach the caller unchanged.
 */
export default defineMethod('svc_getProof', async (ctx, [address, storageKeys, block]) => {
  if (!ctx.proofBackend)
    throw new RpcError(
      RpcCodes.MethodNotFound,
      'svc_getProof is not available: this endpoint runs without a state manager',
    );
  return ctx.proofBackend.getProof(address, storageKeys, block === 'finalized' ? 'finalized' : BigInt(block));
});
