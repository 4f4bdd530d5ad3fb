import type { HeadTracker } from '../head/tracker.js';
import type { RawJson } from '../upstream/raw-json.js';
import type { Lifetime } from './answer-cache.js';

/**
 * What an answer depends on, per method: nothing (the chain id), a block hash (never changes), a block
 * parameter (final at or below the finalized block; at `latest` and other recent blocks only until the
 * head moves), or the block a transaction landed in (read from the answer). `pending` never caches.
 * A `block` rule is also the one place saying where a method takes its block (`at`, for withLatest too);
 * `cached: false` for a method whose answers are not kept all the same (an estimate, an access list).
 */
type Rule =
  { kind: 'constant' } | { kind: 'byHash' } | { kind: 'block'; at: number; cached?: false } | { kind: 'mined' };

const RULES: Record<string, Rule> = {
  eth_chainId: { kind: 'constant' },
  net_version: { kind: 'constant' },
  eth_getBlockByHash: { kind: 'byHash' },
  eth_getBlockTransactionCountByHash: { kind: 'byHash' },
  eth_getTransactionByBlockHashAndIndex: { kind: 'byHash' },
  eth_getBlockByNumber: { kind: 'block', at: 0 },
  eth_getBlockReceipts: { kind: 'block', at: 0 },
  eth_getBlockTransactionCountByNumber: { kind: 'block', at: 0 },
  eth_getBalance: { kind: 'block', at: 1 },
  eth_getCode: { kind: 'block', at: 1 },
  eth_getTransactionCount: { kind: 'block', at: 1 },
  eth_call: { kind: 'block', at: 1 },
  eth_estimateGas: { kind: 'block', at: 1, cached: false },
  eth_createAccessList: { kind: 'block', at: 1, cached: false },
  debug_traceCall: { kind: 'block', at: 1 },
  eth_getStorageAt: { kind: 'block', at: 2 },
  eth_getProof: { kind: 'block', at: 2 },
  eth_feeHistory: { kind: 'block', at: 1 },
  // A transaction or receipt by hash moves with a reorg: final only once its block is finalized.
  eth_getTransactionByHash: { kind: 'mined' },
  eth_getTransactionReceipt: { kind: 'mined' },
};

/**
 * `params` with `latest` for a block param left out: the spec defaults an optional one to it, and some nodes (anvil)
 * insist on it. (A required one is never left out: the spec's check refused that call already.)
 */
export function withLatest(method: string, params: readonly unknown[]): readonly unknown[] {
  const rule = RULES[method];
  return rule?.kind === 'block' && params.length === rule.at ? [...params, 'latest'] : params;
}

export interface CacheDecision {
  /** undefined: the answer must not be cached (and is not looked up). */
  lifetime: Lifetime | 'byAnswer' | undefined;
}

/** Lifetime of an answer about block `tag` (hex number, tag, or an EIP-1898 object), given the head. */
export function blockLifetime(tag: unknown, head: HeadTracker, headIsLive: boolean): Lifetime | undefined {
  if (tag === undefined || tag === 'latest' || tag === 'safe' || tag === 'finalized')
    return headIsLive ? 'head' : undefined;
  if (tag === 'earliest') return 'final';
  if (typeof tag === 'string') return numberLifetime(tag, head, headIsLive);
  if (tag !== null && typeof tag === 'object') {
    const o = tag as { blockHash?: unknown; blockNumber?: unknown };
    if (typeof o.blockHash === 'string') return 'final';
    if (typeof o.blockNumber === 'string') return numberLifetime(o.blockNumber, head, headIsLive);
  }
  return undefined; // pending, or anything unexpected
}

function numberLifetime(hex: string, head: HeadTracker, headIsLive: boolean): Lifetime | undefined {
  let n: bigint;
  try {
    n = BigInt(hex);
  } catch {
    return undefined;
  }
  const finalized = head.finalized;
  if (finalized !== undefined && n <= finalized) return 'final';
  // A recent block can still be reorged away: kept only until the head moves. Beyond the head: not yet.
  const tip = head.head?.number;
  return headIsLive && tip !== undefined && n <= tip ? 'head' : undefined;
}

/** How long the answer to `method(params)` may be kept, before asking the node; undefined: never. */
export function lifetimeOf(
  method: string,
  params: readonly unknown[],
  head: HeadTracker,
  headIsLive: boolean,
): CacheDecision['lifetime'] {
  const rule = RULES[method];
  if (!rule) return undefined;
  switch (rule.kind) {
    case 'constant':
    case 'byHash':
      return 'final';
    case 'block':
      return rule.cached === false ? undefined : blockLifetime(params[rule.at], head, headIsLive);
    case 'mined':
      return 'byAnswer';
  }
}

const BLOCK_NUMBER = /"blockNumber"\s*:\s*"(0x[0-9a-fA-F]+)"/;

/**
 * For answers whose lifetime depends on their content: nulls are never kept (the block or transaction
 * may appear later); a mined transaction or receipt is final once its block is finalized, else kept
 * until the head moves; a pending one (no block number) is not kept.
 */
export function answerLifetime(
  decided: CacheDecision['lifetime'],
  answer: RawJson,
  head: HeadTracker,
  headIsLive: boolean,
): Lifetime | undefined {
  if (decided === undefined || answer.isNull) return undefined;
  if (decided !== 'byAnswer') return decided;
  const m = BLOCK_NUMBER.exec(answer.head(4096));
  if (!m) return undefined;
  return numberLifetime(m[1]!, head, headIsLive);
}
