import type { Counter, Registry } from 'prom-client';
import { RpcError, RpcErrorCode, rpcErrors } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { counter, histogram } from '../common/metrics.js';
import { equal, quantity, type Bytes } from './bytes.js';
import { proofJson, type WorldState } from './state.js';
import type { HashProvider } from './hash.js';
import { verifyStateProof, type StateProofResultJson } from './verify.js';
import type { ProofBackend } from '../rpc/proof.js';

/** -32001: the spec's StateNotRetained error. */
export const STATE_NOT_RETAINED = -32001;

// One interface for both sides: the endpoint's (src/rpc/proof.ts), typed by the spec's StateProof.
export type { ProofBackend };

/** Block roots kept for the check (served blocks are settled, so an entry never goes stale); then started over. */
const MAX_CACHED_ROOTS = 1024;
/** Hashes each of the check's memos keeps (about 200 bytes each, more for a leaf); then started over. */
const MAX_MEMO_HASHES = 20_000;

/** `f` remembered by content: the end of each 32-byte word picks the entry (a small integer), a hit needs all bytes. */
function remembered(f: (data: Bytes) => Bytes): (data: Bytes) => Bytes {
  let memo = new Map<number, { input: Bytes; hash: Bytes }>();
  return (data) => {
    let key = 0;
    for (let i = data.length - 1; i >= 2; i -= 32)
      key = ((key << 7) ^ (data[i - 2]! << 16) ^ (data[i - 1]! << 8) ^ data[i]!) & 0x3fffffff;
    const hit = memo.get(key);
    if (hit !== undefined && equal(hit.input, data)) return hit.hash;
    if (memo.size >= MAX_MEMO_HASHES) memo = new Map();
    const hash = f(data);
    memo.set(key, { input: data.slice(), hash });
    return hash;
  };
}

/**
 * The check hashes ~80 nodes per leaf path (each sibling's contents, then the pair), at ~2–3 µs each in JavaScript.
 * Above the populated depth of the tree (log2 of its leaves, ~17 for 100,000) every path of a block runs through the
 * same nodes, and the levels just below are shared by many paths, so their hashes repeat from proof to proof; so do
 * the root node and, for an account asked for again, its leaf, its neighbour's, its key and its value. They are
 * remembered by content: a hash is a function of its input, so a damaged row (other bytes) is never a hit.
 */
export function memoHasher(hasher: HashProvider): HashProvider {
  const { hash, accountKey, accountValue } = hasher;
  return {
    ...hasher,
    hash: remembered(hash),
    accountKey: remembered(accountKey),
    accountValue: remembered(accountValue),
  };
}

interface ProofBackendOptions {
  latestFinalized: () => bigint | undefined;
  ingestedHead: () => bigint;
  retainedFinalizedBlocks: number;
  metrics: Registry;
  logger?: Logger;
}

/**
 * The block to serve a request at, or the spec's error for it (counted by outcome): only L2 blocks finalized on L1,
 * still retained and already ingested, for a well-formed address and storage keys.
 */
function servableBlock(
  block: bigint | 'finalized',
  address: string,
  storageKeys: readonly string[],
  options: ProofBackendOptions,
  served: Counter<'outcome'>,
): bigint {
  const refuse = (outcome: string, code: number, message: string, data?: Record<string, string>): RpcError => {
    served.inc({ outcome });
    return new RpcError(code, message, data);
  };
  const finalized = options.latestFinalized();
  if (finalized === undefined) {
    const message = 'the state manager has not read the finalized block from L1 yet; try again shortly';
    throw refuse('not_ready', RpcErrorCode.Server, message);
  }
  const n = block === 'finalized' ? finalized : block;
  const requested = { requestedBlock: quantity(n), latestFinalizedBlock: quantity(finalized) };
  if (n > finalized) {
    const message = `block ${n} is not finalized on L1; the latest finalized block is ${finalized}`;
    throw refuse('not_finalized', RpcErrorCode.Server, message, requested);
  }
  const oldest = finalized - BigInt(options.retainedFinalizedBlocks) + 1n;
  if (n < oldest) {
    throw refuse(
      'not_retained',
      STATE_NOT_RETAINED,
      `state for block ${n} is not retained; the oldest retained block is ${oldest} (the latest finalized block is ${finalized})`,
      { requestedBlock: quantity(n), oldestRetainedBlock: quantity(oldest), latestFinalizedBlock: quantity(finalized) },
    );
  }
  const head = options.ingestedHead();
  if (n > head) {
    throw refuse(
      'not_ingested',
      RpcErrorCode.Server,
      `block ${n} is finalized on L1 but the state manager has only applied blocks up to ${head}; try again shortly`,
      requested,
    );
  }
  if (!/^0x[0-9a-fA-F]{40}$/.test(address))
    throw rpcErrors.invalidParams(`address must be 20 bytes of hex, got "${String(address).slice(0, 50)}"`);
  const bad = storageKeys.find((k) => !/^0x[0-9a-fA-F]{1,64}$/.test(k));
  if (bad !== undefined)
    throw rpcErrors.invalidParams(`storage keys must be up to 32 bytes of hex, got "${String(bad).slice(0, 80)}"`);
  return n;
}

/**
 * svc_getProof behind the RPC endpoint: only L2 blocks finalized on L1 and still retained are served (errors as
 * specs/rpc.openrpc.json says: -32000 not finalized, -32001 not retained).
 *
 * Every answer is verified before it leaves, against the state root L1 finalized for that block (the BlocksFinalized
 * record) or, for a block inside a finalized range that L1 names no root for, against the root this tree recorded when
 * it applied the block (stored apart from the node rows). A damaged or missing node row would otherwise yield a proof
 * that fails in the caller's verifier, or on L1, with nothing on our side noticing: instead the caller gets -32603 and
 * the operator an error log and `l2stack_state_proofs_total{outcome="unverified"}`.
 */
export function createProofBackend(world: WorldState, options: ProofBackendOptions): ProofBackend {
  const served = counter(options.metrics, 'l2stack_state_proofs_total', 'svc_getProof requests by outcome', [
    'outcome',
  ] as const);
  const seconds = histogram(options.metrics, 'l2stack_state_proof_seconds', 'Time to build one svc_getProof result');
  const hasher = memoHasher(world.c.hasher);
  const roots = new Map<bigint, { root: string; source: 'L1' | 'state tree' } | undefined>();
  const rootToCheck = async (n: bigint) => {
    if (roots.has(n)) return roots.get(n);
    const [fin, rec] = await Promise.all([world.store.finalization(n), world.store.block(n)]);
    // A zero root is what a finalization without a state manager submits: it names nothing to check against.
    const l1 = fin && !/^0x0{64}$/.test(fin.stateRoot) ? fin.stateRoot : undefined;
    const found = l1
      ? { root: l1, source: 'L1' as const }
      : rec
        ? { root: rec.root, source: 'state tree' as const }
        : undefined;
    if (roots.size >= MAX_CACHED_ROOTS) roots.clear();
    if (found) roots.set(n, found);
    return found;
  };
  const unverified = (n: bigint, address: string, detail: Record<string, unknown>): RpcError => {
    served.inc({ outcome: 'unverified' });
    options.logger?.error(
      { block: n.toString(), address, ...detail },
      'svc_getProof: a proof built from the stored state tree does not verify; not returned (damaged or missing state rows?)',
    );
    return new RpcError(
      RpcErrorCode.Internal,
      `internal error: the proof for block ${n} does not verify against its finalized state root; the operator has been told`,
    );
  };
  return {
    async getProof(address, storageKeys, block) {
      const n = servableBlock(block, address, storageKeys, options, served);
      const timer = seconds.startTimer();
      try {
        // A row too damaged to decode throws while the proof is built: the same answer as one that does not verify.
        const built = world.proofAt(address, storageKeys, n).catch((err: unknown) => {
          if (err instanceof RpcError) throw err;
          throw unverified(n, address, { err, reason: 'the proof could not be built from the stored rows' });
        });
        const [result, expected] = await Promise.all([built, rootToCheck(n)]);
        if (!expected) throw unverified(n, address, { reason: 'no state root recorded for the block' });
        const check = verifyStateProof(expected.root, result, hasher);
        if (!check.ok)
          throw unverified(n, address, {
            root: expected.root,
            rootSource: expected.source,
            failed: check.failed,
            reason: check.reason,
          });
        served.inc({ outcome: 'ok' });
        return proofJson<StateProofResultJson>(result);
      } finally {
        timer();
      }
    },
  };
}
