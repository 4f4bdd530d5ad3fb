import type { StateProof } from '../../generated/rpc/methods.js';

/**
 * What svc_getProof needs from the state manager (src/state/). The endpoint validates params against the spec and
 * passes them on; the backend answers with the spec's StateProof or throws an RpcError (for example -32000 block not
 * finalized on L1, data {requestedBlock, latestFinalizedBlock}), which goes to the caller unchanged.
 */
export interface ProofBackend {
  getProof(address: string, storageKeys: string[], block: bigint | 'finalized'): Promise<StateProof>;
}
