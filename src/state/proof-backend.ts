import type { Registry } from 'prom-client';
import { RpcError, RpcErrorCode, rpcErrors } from '../common/errors.js';
import { counter, histogram } from '../common/metrics.js';
import { quantity } from './bytes.js';
import type { WorldState } from './state.js';
import type { ProofBackend } from '../rpc/proof.js';

/** -32001: the spec's StateNotRetained error. */
export const STATE_NOT_RETAINED = -32001;

// One interface for both sides: the endpoint's (src/rpc/proof.ts), typed by the spec's StateProof.
export type { ProofBackend };

/**
 * svc_getProof behind the RPC endpoint: only L2 blocks finalized on L1 and still retained are served
 * (errors as specs/rpc.openrpc.json says: -32000 not finalized, -32001 not retained).
 */
export function createProofBackend(
  world: WorldState,
  options: { latestFinalized: () => bigint | undefined; ingestedHead: () => bigint; retainedFinalizedBlocks: number; metrics: Registry },
): ProofBackend {
  const served = counter(options.metrics, 'l2stack_state_proofs_total', 'svc_getProof requests by outcome', ['outcome'] as const);
  const seconds = histogram(options.metrics, 'l2stack_state_proof_seconds', 'Time to build one svc_getProof result');
  return {
    async getProof(address, storageKeys, block) {
      const finalized = options.latestFinalized();
      if (finalized === undefined) {
        served.inc({ outcome: 'not_ready' });
        throw new RpcError(RpcErrorCode.Server, 'the state manager has not read the finalized block from L1 yet; try again shortly');
      }
      const n = block === 'finalized' ? finalized : block;
      if (n > finalized) {
        served.inc({ outcome: 'not_finalized' });
        throw new RpcError(RpcErrorCode.Server, `block ${n} is not finalized on L1; the latest finalized block is ${finalized}`, {
          requestedBlock: quantity(n),
          latestFinalizedBlock: quantity(finalized),
        });
      }
      const oldest = finalized - BigInt(options.retainedFinalizedBlocks) + 1n;
      if (n < oldest) {
        served.inc({ outcome: 'not_retained' });
        throw new RpcError(STATE_NOT_RETAINED, `state for block ${n} is not retained; the oldest retained block is ${oldest} (the latest finalized block is ${finalized})`, {
          requestedBlock: quantity(n),
          oldestRetainedBlock: quantity(oldest),
          latestFinalizedBlock: quantity(finalized),
        });
      }
      const head = options.ingestedHead();
      if (n > head) {
        served.inc({ outcome: 'not_ingested' });
        throw new RpcError(RpcErrorCode.Server, `block ${n} is finalized on L1 but the state manager has only applied blocks up to ${head}; try again shortly`, {
          requestedBlock: quantity(n),
          latestFinalizedBlock: quantity(finalized),
        });
      }
      if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw rpcErrors.invalidParams(`address must be 20 bytes of hex, got "${String(address).slice(0, 50)}"`);
      const bad = storageKeys.find((k) => !/^0x[0-9a-fA-F]{1,64}$/.test(k));
      if (bad !== undefined) throw rpcErrors.invalidParams(`storage keys must be up to 32 bytes of hex, got "${String(bad).slice(0, 80)}"`);
      const timer = seconds.startTimer();
      try {
        const result = await world.getProof(address, storageKeys, n);
        served.inc({ outcome: 'ok' });
        return result;
      } finally {
        timer();
      }
    },
  };
}
