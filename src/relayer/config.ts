import { ConfigError, env, parseEnv, type EnvValues } from '../common/config/env.js';
import { databaseEnv, databaseConfigFrom } from '../common/db/config.js';
import { httpEnv, httpLimitsFrom } from '../common/config/http-env.js';
import { rateLimitFrom } from '../common/http/rate-limit.js';
import { LOG_LEVELS } from '../common/log.js';
import { chainConfig, chainEnv, chainProblems } from './chain-config.js';
import { signerProblems } from './signer-config.js';

/**
 * Configuration of `l2stack relayer`, from environment variables only (interface area C). Variable names
 * are the interface's; where it gives no default but the relayer needs a value, the default here is a
 * safe one and is documented in docs/relayer.md and .env.example.
 */

export const DIRECTIONS = ['L1_TO_L2', 'L2_TO_L1'] as const;
export type Direction = (typeof DIRECTIONS)[number];

/** Stuck detection, the chain pin's re-check and NON_EXECUTABLE re-simulation (ours). */
const operationsEnv = {
  RELAYER_STUCK_AFTER_SECONDS: env
    .integer({ min: 1, default: 600 })
    .describe('Ours: a message claimable this long (s) without a claim counts in relayer_messages_stuck.'),
  RELAYER_PIN_CHECK_INTERVAL_MS: env
    .integer({ min: 100, max: 3_600_000, default: 30_000 })
    .describe("Ours: how often (ms) both chains' id and genesis hash are read again; a mismatch stops the relayer."),
  RELAYER_RESIMULATE_NON_EXECUTABLE: env
    .boolean({ default: true })
    .describe('Ours: estimate NON_EXECUTABLE claims again on a backoff (false: NON_EXECUTABLE is final).'),
  RELAYER_RESIMULATE_DELAY_SECONDS: env
    .integer({ min: 1, default: 60 })
    .describe('Ours: first wait (s) before a re-simulation; doubles each time.'),
  RELAYER_RESIMULATE_MAX_DELAY_SECONDS: env
    .integer({ min: 1, default: 3_600 })
    .describe('Ours: longest wait (s) between two re-simulations of one message.'),
  RELAYER_RESIMULATE_PER_ITERATION: env
    .integer({ min: 1, max: 10_000, default: 20 })
    .describe('Ours: NON_EXECUTABLE messages re-simulated per claiming iteration at most.'),
};

export const relayerEnv = {
  // General
  L1_L2_AUTO_CLAIM_ENABLED: env.boolean({ required: true }).describe('Claim L1->L2 messages on L2.'),
  L2_L1_AUTO_CLAIM_ENABLED: env.boolean({ required: true }).describe('Claim L2->L1 messages on L1.'),
  LOG_LEVEL: env.oneOf(LOG_LEVELS, { default: 'info' }).describe('Least severe level logged (JSON lines on stdout).'),
  // Networks
  L1_L2_CALLDATA_ENABLED: env
    .boolean({ default: false })
    .describe('Claim L1->L2 messages with calldata (with EOA_ENABLED also false: every message EXCLUDED).'),
  L1_L2_EOA_ENABLED: env.boolean({ default: false }).describe('Claim L1->L2 messages with empty calldata.'),
  L2_L1_CALLDATA_ENABLED: env.boolean({ default: false }).describe('Claim L2->L1 messages with calldata.'),
  L2_L1_EOA_ENABLED: env.boolean({ default: false }).describe('Claim L2->L1 messages with empty calldata.'),
  L2_MESSAGE_TREE_DEPTH: env
    .integer({ min: 1, max: 32 })
    .describe("Expected depth of the L2 message trees; proofs use the event's, a different one is logged."),
  ENABLE_SVC_ESTIMATE_GAS: env
    .boolean({ default: false })
    .describe('L2 gas via svc_estimateGas (falls back to eth_estimateGas when the node lacks it).'),
  ...chainEnv('L1'),
  ...chainEnv('L2'),
  MAX_FETCH_MESSAGES_FROM_DB: env
    .integer({ min: 1, default: 1_000 })
    .describe('Messages read from the database per pipeline iteration.'),
  // Claiming
  GAS_ESTIMATION_PERCENTILE: env
    .decimal({ min: 0, max: 100, default: '20' })
    .describe('Tip = mean of this reward percentile over the last 4 blocks; maxFeePerGas = 2 x base fee + tip.'),
  L1_L2_ENABLE_RELAYER_SPONSORING: env
    .boolean({ default: false })
    .describe('Claim zero-fee L1->L2 messages at our cost (up to MAX_RELAYER_SPONSOR_GAS_LIMIT).'),
  L2_L1_ENABLE_RELAYER_SPONSORING: env
    .boolean({ default: false })
    .describe('Claim zero-fee L2->L1 messages at our cost (up to MAX_RELAYER_SPONSOR_GAS_LIMIT).'),
  MAX_BUMPS_PER_CYCLE: env
    .integer({ min: 0, default: 5 })
    .describe('Fee bumps (+10 %, same nonce) of a pending claim per cycle; then a cancel and a new cycle.'),
  MAX_CLAIM_GAS_LIMIT: env
    .bigint({ min: 1n, default: 500_000n })
    .describe('A claim estimated above this gas is NON_EXECUTABLE.'),
  MAX_FEE_PER_GAS_CAP: env
    .bigint({ min: 1n, default: 100_000_000_000n })
    .describe('maxFeePerGas (wei) never above this.'),
  MAX_NONCE_DIFF: env
    .integer({ min: 1, default: 10_000 })
    .describe('Claiming pauses while the database nonce runs this far ahead of the chain.'),
  MAX_NUMBER_OF_RETRIES: env
    .integer({ min: 0, default: 100 })
    .describe('Claim submissions (claims and bumps) per message; then NEEDS_MANUAL_INTERVENTION.'),
  MAX_RELAYER_SPONSOR_GAS_LIMIT: env
    .bigint({ min: 1n, default: 250_000n })
    .describe('Gas of a sponsored claim at most; above it: ZERO_FEE.'),
  MAX_RETRY_CYCLES: env
    .integer({ min: 0, default: 2 })
    .describe('Cancelled cycles of a message; then NEEDS_MANUAL_INTERVENTION.'),
  MESSAGE_SUBMISSION_TIMEOUT: env
    .integer({ min: 1, default: 300_000 })
    .describe('Receipt wait (ms) before a pending claim is re-sent with higher fees.'),
  PROFIT_MARGIN: env
    .decimal({ min: 0, default: '1' })
    .describe('A fee-paying message is claimed when fee >= gas x maxFeePerGas x this (exact decimal).'),
  RETRY_DELAY_IN_SECONDS: env
    .integer({ min: 1, default: 30 })
    .describe('Wait (s) before a refused claim (FEE_UNDERPRICED...) is tried again.'),
  // Database
  ...databaseEnv,
  // Cleaner
  DB_CLEANER_ENABLED: env
    .boolean({ required: true })
    .describe('Delete final messages, with their history, not updated for DB_DAYS_BEFORE_NOW_TO_DELETE days.'),
  DB_CLEANING_INTERVAL: env.integer({ min: 1, default: 43_200_000 }).describe('Cleaner period (ms).'),
  DB_DAYS_BEFORE_NOW_TO_DELETE: env
    .integer({ min: 1, default: 14 })
    .describe('Age (days) of the final messages the cleaner deletes.'),
  // API
  API_PORT: env
    .integer({ min: 1, max: 65535, default: 9090 })
    .describe('Port of the relayer API: /messages, /metrics, /health/*.'),
  API_HOST: env.string({ default: '127.0.0.1' }).describe('Ours: address of the relayer API (0.0.0.0 in a container).'),
  /**
   * A client paging through every message needs a few; 400 a second from one address took claiming from 6.3 to 10.3 s
   * p50.
   */
  API_RATE_LIMIT_PER_SECOND: env
    .integer({ min: 0, max: 100_000, default: 20 })
    .describe('Ours: requests a second per client address on /messages (0 = off); past it 429 naming it.'),
  API_RATE_LIMIT_BURST: env
    .integer({ min: 1, max: 1_000_000 })
    .describe('Ours: requests one address may send at once; unset = 2 x API_RATE_LIMIT_PER_SECOND.'),
  API_TRUSTED_PROXY_HOPS: env
    .integer({ min: 0, max: 10, default: 0 })
    .describe('Ours: proxies in front whose X-Forwarded-For names the client (0 = the socket address).'),
  API_ADMIN_TOKEN: env
    .string({ sensitivity: 'secret' })
    .describe(
      'Ours: bearer token (32+ characters) of POST /messages/{hash}/retry and /abandon; unset = they answer 403.',
    ),
  ...operationsEnv,
  /** Connection limits shared by every HTTP server (src/common/config/http-env.ts). */
  ...httpEnv,
};

type Values = EnvValues<typeof relayerEnv>;
type AnyValues = Record<string, unknown>;

function operationsFrom(values: EnvValues<typeof operationsEnv>) {
  return {
    stuckAfterSeconds: values.RELAYER_STUCK_AFTER_SECONDS,
    pinCheckIntervalMs: values.RELAYER_PIN_CHECK_INTERVAL_MS,
    resimulate: {
      enabled: values.RELAYER_RESIMULATE_NON_EXECUTABLE,
      delaySeconds: values.RELAYER_RESIMULATE_DELAY_SECONDS,
      maxDelaySeconds: values.RELAYER_RESIMULATE_MAX_DELAY_SECONDS,
      perIteration: values.RELAYER_RESIMULATE_PER_ITERATION,
    },
  };
}

function extraChecks(values: Values): string[] {
  const v = values as unknown as AnyValues;
  const problems: string[] = [];
  // Only the length is ever said: the value is a secret.
  if (values.API_ADMIN_TOKEN !== undefined && values.API_ADMIN_TOKEN.length < 32) {
    problems.push(
      `API_ADMIN_TOKEN: must be at least 32 characters (got ${values.API_ADMIN_TOKEN.length}); e.g. openssl rand -hex 32`,
    );
  }
  for (const p of ['L1', 'L2'] as const) problems.push(...chainProblems(v, p));
  // The L2 signer claims L1→L2 messages, the L1 signer L2→L1 messages.
  problems.push(...signerProblems(v, 'L2', values.L1_L2_AUTO_CLAIM_ENABLED));
  problems.push(...signerProblems(v, 'L1', values.L2_L1_AUTO_CLAIM_ENABLED));
  return problems;
}

/** One direction's switches, from its `L1_L2_*` or `L2_L1_*` variables (already validated). */
const directionFrom = (v: AnyValues, p: 'L1_L2' | 'L2_L1') => ({
  autoClaimEnabled: v[`${p}_AUTO_CLAIM_ENABLED`] as boolean,
  calldataEnabled: v[`${p}_CALLDATA_ENABLED`] as boolean,
  eoaEnabled: v[`${p}_EOA_ENABLED`] as boolean,
  sponsoringEnabled: v[`${p}_ENABLE_RELAYER_SPONSORING`] as boolean,
});

/** Turns already-validated values into the typed, frozen config. */
function relayerConfigFrom(values: Values) {
  const v = values as unknown as AnyValues;
  const config = {
    logLevel: values.LOG_LEVEL,
    l1: chainConfig(v, 'L1', values.L2_L1_AUTO_CLAIM_ENABLED),
    l2: chainConfig(v, 'L2', values.L1_L2_AUTO_CLAIM_ENABLED),
    l1ToL2: directionFrom(v, 'L1_L2'),
    l2ToL1: directionFrom(v, 'L2_L1'),
    l2MessageTreeDepth: values.L2_MESSAGE_TREE_DEPTH,
    enableSvcEstimateGas: values.ENABLE_SVC_ESTIMATE_GAS,
    maxFetchMessagesFromDb: values.MAX_FETCH_MESSAGES_FROM_DB,
    claiming: {
      gasEstimationPercentile: Number(values.GAS_ESTIMATION_PERCENTILE),
      maxBumpsPerCycle: values.MAX_BUMPS_PER_CYCLE,
      maxClaimGasLimit: values.MAX_CLAIM_GAS_LIMIT,
      maxFeePerGasCap: values.MAX_FEE_PER_GAS_CAP,
      maxNonceDiff: values.MAX_NONCE_DIFF,
      maxNumberOfRetries: values.MAX_NUMBER_OF_RETRIES,
      maxRelayerSponsorGasLimit: values.MAX_RELAYER_SPONSOR_GAS_LIMIT,
      maxRetryCycles: values.MAX_RETRY_CYCLES,
      messageSubmissionTimeoutMs: values.MESSAGE_SUBMISSION_TIMEOUT,
      /** The exact decimal string (e.g. "1.2"): compared as a fraction, never as a float. */
      profitMargin: values.PROFIT_MARGIN,
      retryDelaySeconds: values.RETRY_DELAY_IN_SECONDS,
    },
    database: databaseConfigFrom(values),
    cleaner: {
      enabled: values.DB_CLEANER_ENABLED,
      intervalMs: values.DB_CLEANING_INTERVAL,
      daysBeforeNowToDelete: values.DB_DAYS_BEFORE_NOW_TO_DELETE,
    },
    api: {
      port: values.API_PORT,
      host: values.API_HOST,
      http: httpLimitsFrom(values),
      rateLimit: rateLimitFrom(
        values.API_RATE_LIMIT_PER_SECOND,
        values.API_RATE_LIMIT_BURST,
        values.API_TRUSTED_PROXY_HOPS,
      ),
      adminToken: values.API_ADMIN_TOKEN,
    },
    operations: operationsFrom(values),
  };
  return deepFreeze(config);
}

export type RelayerConfig = ReturnType<typeof relayerConfigFrom>;
export type DirectionConfig = RelayerConfig['l1ToL2'];

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const value of Object.values(o)) deepFreeze(value);
    Object.freeze(o);
  }
  return o;
}

/**
 * Parses and checks every relayer variable of `source`; throws one ConfigError listing every problem.
 * Returns the typed config and the effective values (secrets redacted) to log at start.
 */
export function parseRelayerEnv(source: Record<string, string | undefined>): {
  config: RelayerConfig;
  effective: Record<string, string | undefined>;
} {
  try {
    const { values, effective } = parseEnv(relayerEnv, source, extraChecks);
    return { config: relayerConfigFrom(values), effective };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // The kernel also runs the cross-variable checks over the variables that parsed; a variable that failed
    // its own form is then "missing" to them: keep only its first (own) problem.
    const nameOf = (p: string) => p.slice(0, p.indexOf(':'));
    const problems = err.problems.filter((p, i, all) => all.findIndex((q) => nameOf(q) === nameOf(p)) === i);
    throw problems.length === err.problems.length ? err : new ConfigError(problems);
  }
}

/** The typed, frozen relayer config from `source` (throws ConfigError listing every problem). */
export function loadRelayerConfig(source: Record<string, string | undefined>): RelayerConfig {
  return parseRelayerEnv(source).config;
}
