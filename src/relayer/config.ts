import { FunctionFragment } from 'ethers';
import { ConfigError, env, parseEnv, type EnvValues } from '../common/config/env.js';
import { databaseEnv, databaseConfigFrom, type DatabaseConfig } from '../common/db/config.js';
import { httpEnv, httpLimitsFrom, type HttpLimits } from '../common/config/http-env.js';
import { rateLimitFrom } from '../common/http/rate-limit.js';
import { LOG_LEVELS } from '../common/log.js';
import { compileCalldataFilter } from './calldata-filter.js';
import { MAX_EXTRA_SIGNER_KEYS, parseExtraKeys, signerProblems } from './signer-config.js';

export { MAX_EXTRA_SIGNER_KEYS, parseExtraKeys };

/**
 * Configuration of `l2stack relayer`, from environment variables only (interface area C). Variable names
 * are the interface's; where it gives no default but the relayer needs a value, the default here is a
 * safe one and is documented in docs/relayer.md and .env.example.
 */

export const SIGNER_TYPES = ['private-key', 'remote-signer', 'kms'] as const;
export type SignerType = (typeof SIGNER_TYPES)[number];
export const DIRECTIONS = ['L1_TO_L2', 'L2_TO_L1'] as const;
export type Direction = (typeof DIRECTIONS)[number];

function chainEnv<P extends 'L1' | 'L2'>(p: P) {
  return {
    [`${p}_CONTRACT_ADDRESS`]: env.address({ required: true }),
    [`${p}_RPC_URL`]: env.url({ required: true }),
    [`${p}_EVENT_FILTER_CALLDATA`]: env.string(),
    [`${p}_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE`]: env.string(),
    [`${p}_EVENT_FILTER_FROM_ADDRESS`]: env.address(),
    [`${p}_EVENT_FILTER_TO_ADDRESS`]: env.address(),
    [`${p}_LISTENER_BLOCK_CONFIRMATION`]: env.integer({ default: 4 }),
    [`${p}_LISTENER_INITIAL_FROM_BLOCK`]: env.integer({ default: -1 }),
    [`${p}_LISTENER_INTERVAL`]: env.integer({ min: 1, default: 4_000 }),
    [`${p}_LISTENER_RECEIPT_POLLING_INTERVAL`]: env.integer({ min: 1, default: 4_000 }),
    [`${p}_MAX_BLOCKS_TO_FETCH_LOGS`]: env.integer({ min: 1, default: 1_000 }),
    [`${p}_CLAIM_VIA_ADDRESS`]: env.address(),
    [`${p}_MAX_GAS_FEE_ENFORCED`]: env.boolean({ default: false }),
    /** Ours: claiming on this chain pauses while the signer holds less (wei); 0 = only "cannot pay the next claim". */
    [`${p}_SIGNER_MIN_BALANCE_WEI`]: env.bigint({ min: 0n, default: 0n }),
    [`${p}_SIGNER_TYPE`]: env.oneOf(SIGNER_TYPES, { required: true }),
    [`${p}_SIGNER_PRIVATE_KEY`]: env.hex32({ sensitivity: 'secret' }),
    /** Ours (extension): extra keys claiming beside `${p}_SIGNER_PRIVATE_KEY`, comma-separated; checked in extraChecks. */
    [`${p}_SIGNER_PRIVATE_KEYS`]: env.string({ sensitivity: 'secret' }),
    [`${p}_KMS_KEY_ID`]: env.string(),
    [`${p}_KMS_REGION`]: env.string(),
    [`${p}_REMOTE_SIGNER_ENDPOINT`]: env.url(),
    [`${p}_REMOTE_SIGNER_PUBLIC_KEY`]: env.hex(),
    [`${p}_REMOTE_SIGNER_TLS_KEYSTORE_PATH`]: env.string(),
    [`${p}_REMOTE_SIGNER_TLS_KEYSTORE_PASSWORD`]: env.string({ sensitivity: 'secret' }),
    [`${p}_REMOTE_SIGNER_TLS_TRUSTSTORE_PATH`]: env.string(),
    [`${p}_REMOTE_SIGNER_TLS_TRUSTSTORE_PASSWORD`]: env.string({ sensitivity: 'secret' }),
  } as const;
}

export const relayerEnv = {
  // General
  L1_L2_AUTO_CLAIM_ENABLED: env.boolean({ required: true }),
  L2_L1_AUTO_CLAIM_ENABLED: env.boolean({ required: true }),
  LOG_LEVEL: env.oneOf(LOG_LEVELS, { default: 'info' }),
  // Networks
  L1_L2_CALLDATA_ENABLED: env.boolean({ default: false }),
  L1_L2_EOA_ENABLED: env.boolean({ default: false }),
  L2_L1_CALLDATA_ENABLED: env.boolean({ default: false }),
  L2_L1_EOA_ENABLED: env.boolean({ default: false }),
  L2_MESSAGE_TREE_DEPTH: env.integer({ min: 1, max: 32 }),
  ENABLE_SVC_ESTIMATE_GAS: env.boolean({ default: false }),
  ...chainEnv('L1'),
  ...chainEnv('L2'),
  MAX_FETCH_MESSAGES_FROM_DB: env.integer({ min: 1, default: 1_000 }),
  // Claiming
  GAS_ESTIMATION_PERCENTILE: env.decimal({ min: 0, max: 100, default: '20' }),
  L1_L2_ENABLE_RELAYER_SPONSORING: env.boolean({ default: false }),
  L2_L1_ENABLE_RELAYER_SPONSORING: env.boolean({ default: false }),
  MAX_BUMPS_PER_CYCLE: env.integer({ min: 0, default: 5 }),
  MAX_CLAIM_GAS_LIMIT: env.bigint({ min: 1n, default: 500_000n }),
  MAX_FEE_PER_GAS_CAP: env.bigint({ min: 1n, default: 100_000_000_000n }),
  MAX_NONCE_DIFF: env.integer({ min: 1, default: 10_000 }),
  MAX_NUMBER_OF_RETRIES: env.integer({ min: 0, default: 100 }),
  MAX_RELAYER_SPONSOR_GAS_LIMIT: env.bigint({ min: 1n, default: 250_000n }),
  MAX_RETRY_CYCLES: env.integer({ min: 0, default: 2 }),
  MESSAGE_SUBMISSION_TIMEOUT: env.integer({ min: 1, default: 300_000 }),
  PROFIT_MARGIN: env.decimal({ min: 0, default: '1' }),
  RETRY_DELAY_IN_SECONDS: env.integer({ min: 1, default: 30 }),
  // Database
  ...databaseEnv,
  // Cleaner
  DB_CLEANER_ENABLED: env.boolean({ required: true }),
  DB_CLEANING_INTERVAL: env.integer({ min: 1, default: 43_200_000 }),
  DB_DAYS_BEFORE_NOW_TO_DELETE: env.integer({ min: 1, default: 14 }),
  // API
  API_PORT: env.integer({ min: 1, max: 65535, default: 9090 }),
  /** Ours: the interface names only the port; 127.0.0.1 unless set (containers set 0.0.0.0). */
  API_HOST: env.string({ default: '127.0.0.1' }),
  /**
   * Ours: requests a second per client address on /messages (0 = off). A client paging through every message
   * needs a few; 400 a second from one address took claiming from 6.3 to 10.3 s p50 before this limit.
   */
  API_RATE_LIMIT_PER_SECOND: env.integer({ min: 0, max: 100_000, default: 20 }),
  /** Ours: the requests one address may send at once; unset = 2 × API_RATE_LIMIT_PER_SECOND. */
  API_RATE_LIMIT_BURST: env.integer({ min: 1, max: 1_000_000 }),
  /** Ours: proxies in front of the API whose X-Forwarded-For names the client (0: the socket address). */
  API_TRUSTED_PROXY_HOPS: env.integer({ min: 0, max: 10, default: 0 }),
  /** Ours: the bearer token of the admin actions (retry, abandon), at least 32 characters; unset = they answer 403. */
  API_ADMIN_TOKEN: env.string({ sensitivity: 'secret' }),
  // Operations (ours)
  /** A message claimable on its destination this long without a claim counts in relayer_messages_stuck. */
  RELAYER_STUCK_AFTER_SECONDS: env.integer({ min: 1, default: 600 }),
  /**
   * The chain pin (chain id, genesis block hash) is read again from both nodes this often while running (and at once
   * when a listener sees its head go back by more than its confirmations): a chain reset under a running relayer.
   */
  RELAYER_PIN_CHECK_INTERVAL_MS: env.integer({ min: 100, max: 3_600_000, default: 30_000 }),
  /** NON_EXECUTABLE claims are estimated again on a backoff (false: NON_EXECUTABLE is final, as before). */
  RELAYER_RESIMULATE_NON_EXECUTABLE: env.boolean({ default: true }),
  /** First wait before a NON_EXECUTABLE claim is estimated again; doubles with each attempt. */
  RELAYER_RESIMULATE_DELAY_SECONDS: env.integer({ min: 1, default: 60 }),
  /** The longest wait between two re-simulations of one message. */
  RELAYER_RESIMULATE_MAX_DELAY_SECONDS: env.integer({ min: 1, default: 3_600 }),
  /** NON_EXECUTABLE messages re-simulated per claiming iteration at most (the rest wait for the next). */
  RELAYER_RESIMULATE_PER_ITERATION: env.integer({ min: 1, max: 10_000, default: 20 }),
  /** Connection limits shared by every HTTP server (src/common/config/http-env.ts). */
  ...httpEnv,
};

type Values = EnvValues<typeof relayerEnv>;
type AnyValues = Record<string, unknown>;

export type SignerConfig =
  | { type: 'private-key'; privateKey: string }
  | {
      type: 'remote-signer';
      endpoint: string;
      publicKey: string;
      /** Present only when the keystore path is set. */
      tls: { keystorePath: string; keystorePassword: string; truststorePath: string; truststorePassword: string } | undefined;
    }
  | { type: 'kms'; keyId: string; region: string | undefined };

export interface EventFilters {
  fromAddress: string | undefined;
  toAddress: string | undefined;
  /** Present only when both the expression and the function interface are set. */
  calldata: { expression: string; functionInterface: string } | undefined;
}

export interface ChainConfig {
  rpcUrl: string;
  contractAddress: string;
  listener: {
    /** Undefined when the variable was negative ("used when >= 0"): the default then applies. */
    blockConfirmation: number;
    /** undefined = resume from the database, else the chain head; n >= 0 = start at block n. */
    initialFromBlock: number | undefined;
    intervalMs: number;
    receiptPollingIntervalMs: number;
    maxBlocksToFetchLogs: number;
    /** Present only when at least one filter is set. */
    eventFilters: EventFilters | undefined;
  };
  claimViaAddress: string | undefined;
  maxGasFeeEnforced: boolean;
  /** Claiming on this chain pauses while the signer's balance is below this (wei). */
  signerMinBalanceWei: bigint;
  /** Undefined when no enabled direction claims on this chain (no key is then required). */
  signer: SignerConfig | undefined;
  /**
   * Extra signers claiming beside `signer`, each with its own nonce sequence (`*_SIGNER_PRIVATE_KEYS`,
   * private-key only); empty when unset or when no enabled direction claims on this chain.
   */
  extraSigners: SignerConfig[];
}

export interface DirectionConfig {
  autoClaimEnabled: boolean;
  calldataEnabled: boolean;
  eoaEnabled: boolean;
  sponsoringEnabled: boolean;
}

export interface RelayerConfig {
  logLevel: (typeof LOG_LEVELS)[number];
  l1: ChainConfig;
  l2: ChainConfig;
  l1ToL2: DirectionConfig;
  l2ToL1: DirectionConfig;
  l2MessageTreeDepth: number | undefined;
  enableSvcEstimateGas: boolean;
  maxFetchMessagesFromDb: number;
  claiming: {
    gasEstimationPercentile: number;
    maxBumpsPerCycle: number;
    maxClaimGasLimit: bigint;
    maxFeePerGasCap: bigint;
    maxNonceDiff: number;
    maxNumberOfRetries: number;
    maxRelayerSponsorGasLimit: bigint;
    maxRetryCycles: number;
    messageSubmissionTimeoutMs: number;
    /** The exact decimal string (e.g. "1.2"): compared as a fraction, never as a float. */
    profitMargin: string;
    retryDelaySeconds: number;
  };
  database: DatabaseConfig;
  cleaner: { enabled: boolean; intervalMs: number; daysBeforeNowToDelete: number };
  /** `http`: connection limits of the API server (HTTP_* variables); the shared defaults when absent. */
  api: { port: number; host: string; http?: HttpLimits; rateLimit?: { perSecond: number; burst: number; trustedProxyHops: number }; adminToken?: string };
  /** Stuck detection and NON_EXECUTABLE re-simulation (absent: the defaults). */
  operations?: OperationsConfig;
}

export interface OperationsConfig {
  stuckAfterSeconds: number;
  /** RELAYER_PIN_CHECK_INTERVAL_MS: how often the running relayer reads its chains' identities again. */
  pinCheckIntervalMs: number;
  resimulate: { enabled: boolean; delaySeconds: number; maxDelaySeconds: number; perIteration: number };
}

export const DEFAULT_OPERATIONS: OperationsConfig = { stuckAfterSeconds: 600, pinCheckIntervalMs: 30_000, resimulate: { enabled: true, delaySeconds: 60, maxDelaySeconds: 3_600, perIteration: 20 } };

const DEFAULT_CONFIRMATIONS = 4;
function extraChecks(values: Values): string[] {
  const v = values as unknown as AnyValues;
  const problems: string[] = [];
  // Only the length is ever said: the value is a secret.
  if (values.API_ADMIN_TOKEN !== undefined && values.API_ADMIN_TOKEN.length < 32) {
    problems.push(`API_ADMIN_TOKEN: must be at least 32 characters (got ${values.API_ADMIN_TOKEN.length}); e.g. openssl rand -hex 32`);
  }
  for (const p of ['L1', 'L2'] as const) {
    const expr = v[`${p}_EVENT_FILTER_CALLDATA`] as string | undefined;
    const iface = v[`${p}_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE`] as string | undefined;
    if ((expr === undefined) !== (iface === undefined)) {
      const [set, unset] = expr === undefined ? [`${p}_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE`, `${p}_EVENT_FILTER_CALLDATA`] : [`${p}_EVENT_FILTER_CALLDATA`, `${p}_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE`];
      problems.push(`${unset}: required when ${set} is set (the calldata filter needs both)`);
    }
    if (iface !== undefined) {
      try {
        FunctionFragment.from(iface); // the leading `function` keyword is optional
      } catch {
        problems.push(`${p}_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE: expected a function signature with named typed arguments, e.g. "transfer(address to, uint256 amount)", got "${iface}"`);
      }
    }
    if (expr !== undefined) {
      const error = compileCalldataFilter(expr).error;
      if (error) problems.push(`${p}_EVENT_FILTER_CALLDATA: expected a filter expression over calldata.* (e.g. calldata.funcSignature == "0x26dfbc20" and calldata.amount > 0): ${error}`);
    }
    problems.push(...parseExtraKeys(v[`${p}_SIGNER_PRIVATE_KEYS`] as string | undefined, `${p}_SIGNER_PRIVATE_KEYS`, v[`${p}_SIGNER_PRIVATE_KEY`] as string | undefined).problems);
  }
  // The L2 signer claims L1→L2 messages, the L1 signer L2→L1 messages.
  problems.push(...signerProblems(v, 'L2', values.L1_L2_AUTO_CLAIM_ENABLED));
  problems.push(...signerProblems(v, 'L1', values.L2_L1_AUTO_CLAIM_ENABLED));
  return problems;
}

function chainConfig(v: AnyValues, p: 'L1' | 'L2', signerNeeded: boolean): ChainConfig {
  const get = <T>(suffix: string) => v[`${p}_${suffix}`] as T;
  const expr = get<string | undefined>('EVENT_FILTER_CALLDATA');
  const iface = get<string | undefined>('EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE');
  const calldata = expr !== undefined && iface !== undefined ? { expression: expr, functionInterface: FunctionFragment.from(iface).format('full') } : undefined;
  const fromAddress = get<string | undefined>('EVENT_FILTER_FROM_ADDRESS');
  const toAddress = get<string | undefined>('EVENT_FILTER_TO_ADDRESS');
  const confirmations = get<number>('LISTENER_BLOCK_CONFIRMATION');
  const initial = get<number>('LISTENER_INITIAL_FROM_BLOCK');
  let signer: SignerConfig | undefined;
  const type = get<SignerType>('SIGNER_TYPE');
  if (signerNeeded) {
    if (type === 'private-key') signer = { type, privateKey: get<string>('SIGNER_PRIVATE_KEY') };
    else if (type === 'kms') signer = { type, keyId: get<string>('KMS_KEY_ID'), region: get<string | undefined>('KMS_REGION') };
    else {
      const keystorePath = get<string | undefined>('REMOTE_SIGNER_TLS_KEYSTORE_PATH');
      signer = {
        type,
        endpoint: get<string>('REMOTE_SIGNER_ENDPOINT'),
        publicKey: get<string>('REMOTE_SIGNER_PUBLIC_KEY'),
        tls: keystorePath === undefined ? undefined : {
          keystorePath,
          keystorePassword: get<string>('REMOTE_SIGNER_TLS_KEYSTORE_PASSWORD'),
          truststorePath: get<string>('REMOTE_SIGNER_TLS_TRUSTSTORE_PATH'),
          truststorePassword: get<string>('REMOTE_SIGNER_TLS_TRUSTSTORE_PASSWORD'),
        },
      };
    }
  }
  const extraKeys = signer?.type === 'private-key' ? parseExtraKeys(get('SIGNER_PRIVATE_KEYS'), `${p}_SIGNER_PRIVATE_KEYS`, signer.privateKey).keys : [];
  return {
    rpcUrl: get('RPC_URL'),
    contractAddress: get('CONTRACT_ADDRESS'),
    listener: {
      blockConfirmation: confirmations >= 0 ? confirmations : DEFAULT_CONFIRMATIONS,
      initialFromBlock: initial >= 0 ? initial : undefined,
      intervalMs: get('LISTENER_INTERVAL'),
      receiptPollingIntervalMs: get('LISTENER_RECEIPT_POLLING_INTERVAL'),
      maxBlocksToFetchLogs: get('MAX_BLOCKS_TO_FETCH_LOGS'),
      eventFilters: fromAddress !== undefined || toAddress !== undefined || calldata !== undefined ? { fromAddress, toAddress, calldata } : undefined,
    },
    claimViaAddress: get('CLAIM_VIA_ADDRESS'),
    maxGasFeeEnforced: get('MAX_GAS_FEE_ENFORCED'),
    signerMinBalanceWei: get('SIGNER_MIN_BALANCE_WEI'),
    signer,
    extraSigners: extraKeys.map((privateKey) => ({ type: 'private-key' as const, privateKey })),
  };
}

/** Turns already-validated values into the typed, frozen config (exported for `l2stack dev`). */
export function relayerConfigFrom(values: Values): RelayerConfig {
  const v = values as unknown as AnyValues;
  const config: RelayerConfig = {
    logLevel: values.LOG_LEVEL,
    l1: chainConfig(v, 'L1', values.L2_L1_AUTO_CLAIM_ENABLED),
    l2: chainConfig(v, 'L2', values.L1_L2_AUTO_CLAIM_ENABLED),
    l1ToL2: {
      autoClaimEnabled: values.L1_L2_AUTO_CLAIM_ENABLED,
      calldataEnabled: values.L1_L2_CALLDATA_ENABLED,
      eoaEnabled: values.L1_L2_EOA_ENABLED,
      sponsoringEnabled: values.L1_L2_ENABLE_RELAYER_SPONSORING,
    },
    l2ToL1: {
      autoClaimEnabled: values.L2_L1_AUTO_CLAIM_ENABLED,
      calldataEnabled: values.L2_L1_CALLDATA_ENABLED,
      eoaEnabled: values.L2_L1_EOA_ENABLED,
      sponsoringEnabled: values.L2_L1_ENABLE_RELAYER_SPONSORING,
    },
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
      profitMargin: values.PROFIT_MARGIN,
      retryDelaySeconds: values.RETRY_DELAY_IN_SECONDS,
    },
    database: databaseConfigFrom(values),
    cleaner: { enabled: values.DB_CLEANER_ENABLED, intervalMs: values.DB_CLEANING_INTERVAL, daysBeforeNowToDelete: values.DB_DAYS_BEFORE_NOW_TO_DELETE },
    api: {
      port: values.API_PORT, host: values.API_HOST, http: httpLimitsFrom(values),
      rateLimit: rateLimitFrom(values.API_RATE_LIMIT_PER_SECOND, values.API_RATE_LIMIT_BURST, values.API_TRUSTED_PROXY_HOPS),
      adminToken: values.API_ADMIN_TOKEN,
    },
    operations: {
      stuckAfterSeconds: values.RELAYER_STUCK_AFTER_SECONDS,
      pinCheckIntervalMs: values.RELAYER_PIN_CHECK_INTERVAL_MS,
      resimulate: {
        enabled: values.RELAYER_RESIMULATE_NON_EXECUTABLE,
        delaySeconds: values.RELAYER_RESIMULATE_DELAY_SECONDS,
        maxDelaySeconds: values.RELAYER_RESIMULATE_MAX_DELAY_SECONDS,
        perIteration: values.RELAYER_RESIMULATE_PER_ITERATION,
      },
    },
  };
  return deepFreeze(config);
}

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
export function parseRelayerEnv(source: Record<string, string | undefined>): { config: RelayerConfig; effective: Record<string, string | undefined> } {
  try {
    const { values, effective } = parseEnv(relayerEnv, source, extraChecks);
    return { config: relayerConfigFrom(values), effective };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // The kernel also runs the cross-variable checks over the variables that parsed; a variable that failed
    // its own form is then "missing" to them: keep only its first (own) problem.
    const seen = new Set<string>();
    const problems = err.problems.filter((p) => {
      const name = p.slice(0, p.indexOf(':'));
      if (seen.has(name)) return false;
      seen.add(name);
      return true;
    });
    throw problems.length === err.problems.length ? err : new ConfigError(problems);
  }
}

/** The typed, frozen relayer config from `source` (throws ConfigError listing every problem). */
export function loadRelayerConfig(source: Record<string, string | undefined>): RelayerConfig {
  return parseRelayerEnv(source).config;
}
