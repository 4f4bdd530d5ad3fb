import { env, parseEnv } from '../common/config/env.js';

/**
 * How a block's state change is read from the upstream (STATE_L2_TRACE_METHOD):
 * - `debug_traceBlockByHash`: prestateTracer in diffMode, by the header's hash (geth, Besu, Erigon, anvil);
 * - `trace_replayBlockTransactions`: the parity stateDiff (Besu, Erigon, Nethermind, anvil), by number, so
 *   the header is read again after it and must not have changed. The devnet uses it: see parity-diff.ts.
 */
export const TRACE_METHODS = ['debug_traceBlockByHash', 'trace_replayBlockTransactions'] as const;
export type TraceMethod = (typeof TRACE_METHODS)[number];

/**
 * The tree's hash and encodings (STATE_HASH): `poseidon2` is Linea's format (Poseidon2 over KoalaBear, the
 * roots the chain's prover finalizes), `keccak` our own keccak256 format. Stored with the tree (state-hash.ts).
 */
export const STATE_HASHES = ['poseidon2', 'keccak'] as const;
export type StateHash = (typeof STATE_HASHES)[number];
export const DEFAULT_STATE_HASH: StateHash = 'poseidon2';

/**
 * Environment of the state manager (`svc_getProof`). Every variable is documented in .env.example
 * (section "State manager"). LOG_LEVEL and DATABASE_* are the common variables.
 */
export const stateEnv = {
  STATE_L2_RPC_URL: env
    .url({ required: true })
    .describe('L2 node to follow; set, the state manager runs inside l2stack rpc and serves svc_getProof.'),
  STATE_L1_RPC_URL: env
    .url({ required: true })
    .describe('L1 node, read for the finalizations that decide which L2 blocks are provable.'),
  STATE_L1_MESSAGE_SERVICE: env
    .address({ required: true })
    .describe('L1 message service whose finalizations are read.'),
  STATE_RETAINED_FINALIZED_BLOCKS: env
    .integer({ min: 1, default: 128 })
    .describe('Finalized blocks whose state stays provable (older: -32001).'),
  STATE_POLL_INTERVAL_MS: env.integer({ min: 10, default: 1_000 }).describe('Poll period (ms) of both nodes.'),
  STATE_L1_FROM_BLOCK: env.integer({ min: 0, default: 0 }).describe('First L1 block scanned for BlocksFinalized.'),
  STATE_L1_LOG_RANGE: env.integer({ min: 1, default: 10_000 }).describe('Largest L1 eth_getLogs range per call.'),
  STATE_MAX_BLOCKS_PER_STEP: env
    .integer({ min: 1, default: 100 })
    .describe('Blocks applied per ingest step (between progress reports and finalization reads).'),
  STATE_BLOCKS_PER_TRANSACTION: env
    .integer({ min: 1, max: 1_000, default: 100 })
    .describe('Blocks written per database transaction while catching up (1 = one per block).'),
  STATE_L2_TRACE_METHOD: env
    .oneOf(TRACE_METHODS, { default: 'debug_traceBlockByHash' })
    .describe("How each L2 block's state change is read: prestateTracer diffMode, or parity stateDiff."),
  STATE_HASH: env
    .oneOf(STATE_HASHES, { default: DEFAULT_STATE_HASH })
    .describe(
      "The tree's hash and proofs: poseidon2 (Linea's) or keccak; stored with the tree, another one refuses to start.",
    ),
  STATE_GENESIS_ACCOUNTS: env
    .addressList('a comma-separated list of 0x-prefixed 20-byte addresses', { default: [] as string[] })
    .describe('Genesis-allocated accounts read at block 0 (untouched ones are otherwise not in the tree).'),
};

export interface StateConfig {
  l2RpcUrl: string;
  l1RpcUrl: string;
  /** The L1 message service whose BlocksFinalized events / currentL2BlockNumber() say what is finalized. */
  l1MessageService: string;
  /** Finalized blocks whose state stays provable (the latest finalized block and the ones before it). */
  retainedFinalizedBlocks: number;
  pollIntervalMs: number;
  /** First L1 block scanned for BlocksFinalized. */
  l1FromBlock: number;
  /** Largest L1 block range per eth_getLogs call. */
  l1LogRange: number;
  /** Blocks applied per ingest step before progress is reported and finalization re-read. */
  maxBlocksPerStep: number;
  /** Blocks written per database transaction while catching up (1: one transaction per block). */
  blocksPerTransaction: number;
  /** How each block's state change is read from the L2 upstream (see TRACE_METHODS). */
  traceMethod: TraceMethod;
  /** The tree's hash and encodings; a database holds a tree of one only (see STATE_HASHES). */
  hash: StateHash;
  /** Accounts of the L2 genesis allocation to read at block 0 (no state diff ever shows untouched ones). */
  genesisAccounts: string[];
  /** Postgres schema (tests use their own). */
  schema?: string;
}

/** Parses the STATE_* variables (throws one ConfigError listing every problem). */
export function loadStateConfig(
  source: Record<string, string | undefined>,
  overrides: Partial<StateConfig> = {},
): StateConfig {
  const { values: v } = parseEnv(stateEnv, source);
  return Object.freeze({
    l2RpcUrl: v.STATE_L2_RPC_URL,
    l1RpcUrl: v.STATE_L1_RPC_URL,
    l1MessageService: v.STATE_L1_MESSAGE_SERVICE,
    retainedFinalizedBlocks: v.STATE_RETAINED_FINALIZED_BLOCKS,
    pollIntervalMs: v.STATE_POLL_INTERVAL_MS,
    l1FromBlock: v.STATE_L1_FROM_BLOCK,
    l1LogRange: v.STATE_L1_LOG_RANGE,
    maxBlocksPerStep: v.STATE_MAX_BLOCKS_PER_STEP,
    blocksPerTransaction: v.STATE_BLOCKS_PER_TRANSACTION,
    traceMethod: v.STATE_L2_TRACE_METHOD,
    hash: v.STATE_HASH,
    genesisAccounts: [...v.STATE_GENESIS_ACCOUNTS],
    ...overrides,
  });
}
