import { readFileSync } from 'node:fs';
import { env, parseEnv } from '../common/config/env.js';
import { isHexOfLength } from '../common/eth/hex.js';
import { httpEnv, httpLimitsFrom, type HttpLimits } from '../common/config/http-env.js';
import { rateLimitFrom, type HttpRateLimit } from '../common/http/rate-limit.js';
import type { PricingSettings } from './indexer/sources.js';

/**
 * Configuration of the token data API (`l2stack token-api`) and of its indexer (`l2stack token-indexer`).
 * Both are plain frozen objects, so `l2stack dev` can build them in code from the devnet's addresses
 * without going through the environment.
 */

export interface ExcludedWalletConfig {
  /** Lower-case 0x address. */
  address: string;
  label: string;
  status: string;
}

export interface TokenIndexerConfig {
  rpcUrl: string;
  /** Checked against the node at start when set; otherwise read from the node. */
  chainId: number | undefined;
  v2Factories: readonly string[];
  v3Factories: readonly string[];
  /** Tokens pegged at 1 USD. */
  stableTokens: readonly string[];
  /**
   * Other tokens that may price a pool (WETH and the like); they are priced themselves through a route to a stablecoin.
   */
  quoteTokens: readonly string[];
  /** Always indexed as a token, whether or not it has pools. */
  nativeToken: string | undefined;
  confirmations: number;
  startBlock: number;
  batchBlocks: number;
  pollMs: number;
  /** How often every token's totalSupply() is read again. */
  metadataRefreshMs: number;
  /** token-lists JSON, a file path or an http(s) URL. */
  tokenList: string | undefined;
  tokenListRefreshMs: number;
  /** A listed token is secure when its market cap (price × total supply) is above this many USD. */
  secureMinMarketCapUsd: number;
  /** Pools whose quote side is worth less than this many USD do not price a token. */
  minLiquidityUsd: number;
  /** Outlier, stale and confidence settings (indexer/sources.ts); defaults (DEFAULT_PRICING) when absent. */
  pricing?: Partial<Omit<PricingSettings, 'minLiquidityUsd'>>;
}

export interface TokenApiConfig {
  host: string;
  port: number;
  /** Base URL used in generated logo links; defaults to the URL the server listens on. */
  publicUrl: string | undefined;
  /** `max-age` of Cache-Control on token and price responses. */
  cacheMaxAgeSeconds: number;
  nativeToken: string | undefined;
  excludedWallets: readonly ExcludedWalletConfig[];
  supplyRefreshMs: number;
  /** Chain used by the supply job (the indexer's RPC). */
  rpcUrl: string | undefined;
  /** Indexer run inside the API process; undefined = only serve (another process indexes). */
  indexer: TokenIndexerConfig | undefined;
  /** Connection limits of the HTTP server (HTTP_* variables); the shared defaults when absent. */
  http?: HttpLimits;
  /**
   * /health/ready: how long the database and the node may take to answer (ms), and how long the indexer
   * or the supply job may go without progress before the API reports not ready. Defaults when absent.
   */
  readiness?: { timeoutMs: number; maxStallMs: number };
  /**
   * The read model follows the database by notifications; this poll (ms) bounds how long a replica stays
   * behind when a notification is lost with its connection. Default 5,000 when absent.
   */
  readModelPollMs?: number;
  /**
   * Per-address rate limit of the token and price routes (TOKEN_API_RATE_LIMIT_*; perSecond 0: off). Absent
   * (a config built in code, as tests and benches do): no limit.
   */
  rateLimit?: Omit<HttpRateLimit, 'variable'>;
}

const addressList = () =>
  env.addressList('a comma-separated list of 0x-prefixed 20-byte hex addresses', { unique: true });

/** Parses the excluded-wallet list: a JSON array, or `@path` to a file holding one. */
export function parseExcludedWallets(raw: string): ExcludedWalletConfig[] {
  const text = raw.startsWith('@') ? readFileSync(raw.slice(1), 'utf8') : raw;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`not valid JSON (${(err as Error).message})`);
  }
  if (!Array.isArray(parsed)) throw new Error('expected a JSON array of {"address","label","status"} objects');
  const seen = new Set<string>();
  return parsed.map((item: unknown, i) => {
    const w = item as Partial<Record<'address' | 'label' | 'status', unknown>>;
    if (typeof w !== 'object' || w === null || typeof w.address !== 'string' || !isHexOfLength(w.address, 20)) {
      throw new Error(`item ${i + 1}: "address" must be 0x followed by 40 hex digits`);
    }
    if (typeof w.label !== 'string' || w.label === '')
      throw new Error(`item ${i + 1}: "label" must be a non-empty string`);
    const status = w.status ?? 'active';
    if (typeof status !== 'string' || status === '')
      throw new Error(`item ${i + 1}: "status" must be a non-empty string`);
    const address = w.address.toLowerCase();
    if (seen.has(address)) throw new Error(`item ${i + 1}: address ${address} is listed twice`);
    seen.add(address);
    return { address, label: w.label, status };
  });
}

const excludedWallets = () =>
  env.custom(
    'a JSON array of {"address","label","status"} objects, or @/path/to/file.json',
    (raw) => {
      try {
        return { ok: true, value: parseExcludedWallets(raw) };
      } catch (err) {
        return { ok: false, reason: (err as Error).message };
      }
    },
    { default: [] as ExcludedWalletConfig[] },
  );

export const tokenApiEnv = {
  TOKEN_API_HOST: env.string({ default: '127.0.0.1' }).describe('Address the token API listens on.'),
  TOKEN_API_PORT: env.integer({ min: 0, max: 65535, default: 3000 }).describe('Port of the token API.'),
  TOKEN_API_PUBLIC_URL: env.url().describe('Base URL of generated logo links; unset = the listen address.'),
  TOKEN_API_CACHE_MAX_AGE: env
    .integer({ min: 0, max: 86_400, default: 30 })
    .describe('Cache-Control max-age (s) of token and price answers; supply at most its refresh interval.'),
  NATIVE_TOKEN_ADDRESS: env
    .address()
    .describe("The chain's native token (ERC-20): the only address with supply figures."),
  TOKEN_SUPPLY_EXCLUDED_WALLETS: excludedWallets().describe(
    'Wallets left out of the circulating supply, whatever their (informational) status.',
  ),
  TOKEN_SUPPLY_REFRESH_MS: env
    .integer({ min: 1_000, default: 60_000 })
    .describe('How often (ms) the native token supply is read.'),
  TOKEN_INDEXER_RPC_URL: env
    .url()
    .describe('JSON-RPC of the chain to index; required by the indexer and the supply job.'),
  TOKEN_INDEXER_CHAIN_ID: env
    .integer({ min: 1 })
    .describe('Refuse to start when the node serves another chain; unset = read from the node.'),
  TOKEN_INDEXER_V2_FACTORIES: addressList().describe(
    'V2 factories (PairCreated, Swap, Sync) whose pools are followed.',
  ),
  TOKEN_INDEXER_V3_FACTORIES: addressList().describe(
    'V3 factories (PoolCreated, Swap with sqrtPriceX96) whose pools are followed.',
  ),
  TOKEN_INDEXER_STABLE_TOKENS: addressList().describe('Tokens priced at 1 USD.'),
  TOKEN_INDEXER_QUOTE_TOKENS: addressList().describe(
    'Further tokens (WETH...) that may price others, priced hop by hop to a stablecoin.',
  ),
  TOKEN_INDEXER_CONFIRMATIONS: env
    .integer({ min: 0, max: 10_000, default: 5 })
    .describe('Blocks behind the head the indexer stays (reorg safety).'),
  TOKEN_INDEXER_START_BLOCK: env.integer({ min: 0, default: 0 }).describe('First block indexed.'),
  TOKEN_INDEXER_BATCH_BLOCKS: env
    .integer({ min: 1, max: 100_000, default: 2_000 })
    .describe('Blocks per eth_getLogs range.'),
  TOKEN_INDEXER_POLL_MS: env.integer({ min: 100, default: 2_000 }).describe('Polling interval (ms) of the indexer.'),
  TOKEN_INDEXER_METADATA_REFRESH_MS: env
    .integer({ min: 1_000, default: 7_200_000 })
    .describe("How often (ms) every token's totalSupply() is read again."),
  TOKEN_INDEXER_MIN_LIQUIDITY_USD: env
    .decimal({ min: 0, default: '0' })
    .describe('Pools whose quote side is worth less (USD) do not price a token.'),
  TOKEN_INDEXER_OUTLIER_SHARE: env
    .decimal({ min: 0.001, max: 100, default: '0.2' })
    .describe('A pool straying more than this share from the weighted median of the others is left out.'),
  TOKEN_INDEXER_STALE_AFTER_SECONDS: env
    .integer({ min: 1, default: 604_800 })
    .describe('A pool state this much older (s) than the block priced is left out while a fresher one remains.'),
  TOKEN_INDEXER_REFERENCE_LIQUIDITY_USD: env
    .decimal({ min: 1, default: '100000' })
    .describe("Pool liquidity (USD) at which confidence's depth factor reaches 1."),
  TOKEN_LIST: env
    .string()
    .describe('Curated token list (tokenlists.org JSON), a file or an http(s) URL: logos and the secure flag.'),
  TOKEN_LIST_REFRESH_MS: env
    .integer({ min: 1_000, default: 7_200_000 })
    .describe('How often (ms) the token list is read again.'),
  TOKEN_SECURE_MIN_MARKET_CAP_USD: env
    .decimal({ min: 0, default: '50000' })
    .describe('isSecure: on the token list and market cap (price x supply) above this (USD).'),
  TOKEN_API_READY_TIMEOUT_MS: env
    .integer({ min: 100, max: 60_000, default: 3_000 })
    .describe('/health/ready: time (ms) the database and the node may take to answer.'),
  TOKEN_API_READY_MAX_STALL_MS: env
    .integer({ min: 1_000, default: 120_000 })
    .describe('/health/ready: time (ms) the indexer or the supply job may go without progress.'),
  TOKEN_API_RATE_LIMIT_PER_SECOND: env
    .integer({ min: 0, max: 1_000_000, default: 100 })
    .describe('Requests a second per client address on /tokens and /prices (0 = off); past it 429 naming it.'),
  TOKEN_API_RATE_LIMIT_BURST: env
    .integer({ min: 1, max: 10_000_000 })
    .describe('Requests one address may send at once; unset = 2 x TOKEN_API_RATE_LIMIT_PER_SECOND.'),
  TOKEN_API_TRUSTED_PROXY_HOPS: env
    .integer({ min: 0, max: 10, default: 0 })
    .describe('Proxies in front whose X-Forwarded-For names the client (0 = the socket address).'),
  TOKEN_API_READ_MODEL_POLL_MS: env
    .integer({ min: 100, max: 600_000, default: 5_000 })
    .describe('Poll (ms) bounding how long a replica lags when a change notification is lost.'),
  ...httpEnv,
};

type Values = ReturnType<typeof parseEnv<typeof tokenApiEnv>>['values'];
/** A config and the environment it was read from, as logged (secrets redacted). */
type Loaded<C> = { config: C; effective: Record<string, string | undefined> };

function indexerFrom(v: Values): TokenIndexerConfig {
  return Object.freeze({
    rpcUrl: v.TOKEN_INDEXER_RPC_URL!,
    chainId: v.TOKEN_INDEXER_CHAIN_ID,
    v2Factories: v.TOKEN_INDEXER_V2_FACTORIES ?? [],
    v3Factories: v.TOKEN_INDEXER_V3_FACTORIES ?? [],
    stableTokens: v.TOKEN_INDEXER_STABLE_TOKENS ?? [],
    quoteTokens: v.TOKEN_INDEXER_QUOTE_TOKENS ?? [],
    nativeToken: v.NATIVE_TOKEN_ADDRESS,
    confirmations: v.TOKEN_INDEXER_CONFIRMATIONS,
    startBlock: v.TOKEN_INDEXER_START_BLOCK,
    batchBlocks: v.TOKEN_INDEXER_BATCH_BLOCKS,
    pollMs: v.TOKEN_INDEXER_POLL_MS,
    metadataRefreshMs: v.TOKEN_INDEXER_METADATA_REFRESH_MS,
    tokenList: v.TOKEN_LIST,
    tokenListRefreshMs: v.TOKEN_LIST_REFRESH_MS,
    secureMinMarketCapUsd: Number(v.TOKEN_SECURE_MIN_MARKET_CAP_USD),
    minLiquidityUsd: Number(v.TOKEN_INDEXER_MIN_LIQUIDITY_USD),
    pricing: {
      outlierShare: Number(v.TOKEN_INDEXER_OUTLIER_SHARE),
      staleAfterSeconds: v.TOKEN_INDEXER_STALE_AFTER_SECONDS,
      referenceLiquidityUsd: Number(v.TOKEN_INDEXER_REFERENCE_LIQUIDITY_USD),
    },
  });
}

function needsRpc(v: Values, what: string): string[] {
  return v.TOKEN_INDEXER_RPC_URL === undefined
    ? [`TOKEN_INDEXER_RPC_URL: required ${what}: set it to an absolute http or https URL`]
    : [];
}

/**
 * Config of `l2stack token-api`. With `indexer: true` (the default; `--no-indexer` turns it off) the
 * indexer runs in the same process and TOKEN_INDEXER_RPC_URL is required; the supply job needs it too.
 */
export function loadTokenApiConfig(
  source: Record<string, string | undefined>,
  options: { indexer?: boolean } = {},
): Loaded<TokenApiConfig> {
  const withIndexer = options.indexer ?? true;
  const { values: v, effective } = parseEnv(tokenApiEnv, source, (v) => [
    ...(withIndexer ? needsRpc(v, 'when the indexer runs in the API process (or pass --no-indexer)') : []),
    ...(!withIndexer && v.NATIVE_TOKEN_ADDRESS !== undefined
      ? needsRpc(v, 'to read the supply of NATIVE_TOKEN_ADDRESS')
      : []),
  ]);
  const config: TokenApiConfig = Object.freeze({
    host: v.TOKEN_API_HOST,
    port: v.TOKEN_API_PORT,
    publicUrl: v.TOKEN_API_PUBLIC_URL?.replace(/\/+$/, ''),
    cacheMaxAgeSeconds: v.TOKEN_API_CACHE_MAX_AGE,
    nativeToken: v.NATIVE_TOKEN_ADDRESS,
    excludedWallets: Object.freeze([...v.TOKEN_SUPPLY_EXCLUDED_WALLETS]),
    supplyRefreshMs: v.TOKEN_SUPPLY_REFRESH_MS,
    rpcUrl: v.TOKEN_INDEXER_RPC_URL,
    indexer: withIndexer ? indexerFrom(v) : undefined,
    http: httpLimitsFrom(v),
    readiness: { timeoutMs: v.TOKEN_API_READY_TIMEOUT_MS, maxStallMs: v.TOKEN_API_READY_MAX_STALL_MS },
    readModelPollMs: v.TOKEN_API_READ_MODEL_POLL_MS,
    rateLimit: rateLimitFrom(
      v.TOKEN_API_RATE_LIMIT_PER_SECOND,
      v.TOKEN_API_RATE_LIMIT_BURST,
      v.TOKEN_API_TRUSTED_PROXY_HOPS,
    ),
  });
  return { config, effective };
}

/** Config of `l2stack token-indexer`. */
export function loadTokenIndexerConfig(source: Record<string, string | undefined>): Loaded<TokenIndexerConfig> {
  const { values, effective } = parseEnv(tokenApiEnv, source, (v) => needsRpc(v, 'for the indexer'));
  return { config: indexerFrom(values), effective };
}

const lower = (a: string) => a.toLowerCase();

/** Config built in code (`l2stack dev`) may carry checksummed addresses: everything downstream compares lower case. */
export function normalizeIndexerConfig(c: TokenIndexerConfig): TokenIndexerConfig {
  return Object.freeze({
    ...c,
    v2Factories: c.v2Factories.map(lower),
    v3Factories: c.v3Factories.map(lower),
    stableTokens: c.stableTokens.map(lower),
    quoteTokens: c.quoteTokens.map(lower),
    nativeToken: c.nativeToken?.toLowerCase(),
  });
}

export function normalizeTokenApiConfig(c: TokenApiConfig): TokenApiConfig {
  return Object.freeze({
    ...c,
    nativeToken: c.nativeToken?.toLowerCase(),
    excludedWallets: c.excludedWallets.map((w) => ({ ...w, address: lower(w.address) })),
    indexer: c.indexer ? normalizeIndexerConfig(c.indexer) : undefined,
  });
}
