import { createRequire } from 'node:module';
import { expect } from 'vitest';
import { createTokenApiClient } from '../../generated/token-api/client.js';
import { loadOpenApi, resolveRef } from '../../src/common/http/spec.js';
import type { OrderColumn } from '../../src/token-api/repository.js';
import type { TokenApiConfig } from '../../src/token-api/config.js';
import { startTokenApi, type TokenApiHandle } from '../../src/token-api/index.js';
import { testCommon } from '../helpers/common.js';
import { openTestDb } from '../helpers/db.js';

export { testCommon };

export function apiConfig(overrides: Partial<TokenApiConfig> = {}): TokenApiConfig {
  return {
    host: '127.0.0.1',
    port: 0,
    publicUrl: undefined,
    cacheMaxAgeSeconds: 30,
    nativeToken: undefined,
    excludedWallets: [],
    supplyRefreshMs: 60_000,
    rpcUrl: undefined,
    indexer: undefined,
    ...overrides,
  };
}

export interface TestApi {
  api: TokenApiHandle;
  url: string;
  client: ReturnType<typeof createTokenApiClient>;
  db: Awaited<ReturnType<typeof openTestDb>>;
  schema: string;
  common: ReturnType<typeof testCommon>;
  close(): Promise<void>;
}

/** Starts the API on a free port over a fresh schema, validating its own responses against the spec. */
export async function startTestApi(
  overrides: Partial<TokenApiConfig> = {},
  db?: Awaited<ReturnType<typeof openTestDb>>,
  options: { validateResponses?: boolean; schema?: string } = {},
): Promise<TestApi> {
  const database = db ?? (await openTestDb());
  const schema = options.schema ?? database.schema('token_api');
  const common = testCommon();
  const api = await startTokenApi({
    common,
    db: database.client,
    config: apiConfig(overrides),
    schema,
    validateResponses: options.validateResponses ?? true,
  });
  return {
    api,
    url: api.url,
    client: createTokenApiClient(api.url),
    db: database,
    schema,
    common,
    close: async () => {
      await common.shutdown.run('test done');
      if (!db) await database.close();
    },
  };
}

// --- response validation against specs/token-api.openapi.yaml (ajv 8, as express-openapi-validator uses) ---

const spec = loadOpenApi('token-api.openapi.yaml') as unknown as {
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>;
  components: { responses: Record<string, unknown> };
};
/** Every `order` value, read from the spec (components.schemas.OrderColumns). */
export const ORDER_COLUMNS = resolveRef(loadOpenApi('token-api.openapi.yaml'), {
  $ref: '#/components/schemas/OrderColumns',
}).enum as OrderColumn[];
const requireFromFormats = createRequire(createRequire(import.meta.url).resolve('ajv-formats'));
// ajv 8 is nested under ajv-formats; typed loosely on purpose.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const Ajv = (requireFromFormats('ajv') as any).default;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const addFormats = (createRequire(import.meta.url)('ajv-formats') as any).default;
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(spec, 'spec');

interface ResponseSpec {
  headers?: Record<string, unknown>;
  content?: Record<string, { schema: unknown }>;
}

function resolve<T>(node: unknown): T {
  const ref = (node as { $ref?: string }).$ref;
  if (!ref) return node as T;
  const parts = ref.replace(/^#\//, '').split('/');
  let cur: unknown = spec;
  for (const p of parts) cur = (cur as Record<string, unknown>)[p];
  return resolve<T>(cur);
}

function operation(operationId: string) {
  for (const item of Object.values(spec.paths))
    for (const op of Object.values(item)) if (op.operationId === operationId) return op;
  throw new Error(`no operation ${operationId}`);
}

/**
 * Asserts that a response is one the spec documents for the operation: the status is listed, the media
 * type is one of that status's, the body matches the schema, and the documented headers are present.
 */
export async function expectSpecResponse(operationId: string, res: Response): Promise<unknown> {
  const op = operation(operationId);
  const documented = op.responses[String(res.status)];
  expect(documented, `${operationId}: status ${res.status} is not documented`).toBeDefined();
  const r = resolve<ResponseSpec>(documented);
  for (const name of Object.keys(r.headers ?? {}))
    expect(res.headers.get(name), `${operationId} ${res.status}: header ${name}`).not.toBeNull();
  const text = await res.text();
  if (!r.content) {
    expect(text).toBe('');
    return undefined;
  }
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
  const media = r.content[type];
  expect(media, `${operationId} ${res.status}: content type ${type} is not documented`).toBeDefined();
  const body = type.endsWith('json') ? JSON.parse(text) : text;
  const schemaRef = (media!.schema as { $ref?: string }).$ref;
  const validate = ajv.compile(schemaRef ? { $ref: `spec${schemaRef}` } : (media!.schema as object));
  const ok = validate(body);
  expect(ok, `${operationId} ${res.status}: ${JSON.stringify(validate.errors)} in ${text.slice(0, 300)}`).toBe(true);
  return body;
}

// --- seeding ---

export interface TokenSeed {
  address: string;
  name?: string;
  symbol?: string;
  decimals?: number;
  totalSupply?: string;
  currentPrice?: number | null;
  priceUpdatedAt?: Date | null;
  last24hVariation?: number | null;
  fdv?: number | null;
  buys?: number;
  sells?: number;
  swaps?: number;
  isPossibleSpam?: boolean | null;
  isSecure?: boolean;
  listLogo?: string | null;
  createdAt?: Date;
  updatedAt?: Date;
}

export async function seedTokens(t: TestApi, seeds: TokenSeed[]): Promise<void> {
  const rows = seeds.map((s) => ({
    address: s.address.toLowerCase(),
    name: s.name ?? `Token ${s.address.slice(2, 6)}`,
    symbol: s.symbol ?? `T${s.address.slice(2, 5).toUpperCase()}`,
    decimals: s.decimals ?? 18,
    total_supply_raw: '0',
    total_supply: s.totalSupply ?? '0',
    total_supply_num: s.totalSupply ?? '0',
    current_price: s.currentPrice ?? null,
    price_updated_at: s.priceUpdatedAt ?? null,
    last24h_variation: s.last24hVariation ?? null,
    last24h_variation_abs: s.last24hVariation == null ? null : Math.abs(s.last24hVariation),
    fdv: s.fdv ?? null,
    buys: s.buys ?? 0,
    sells: s.sells ?? 0,
    swaps: s.swaps ?? 0,
    is_possible_spam: s.isPossibleSpam === undefined ? false : s.isPossibleSpam,
    is_secure: s.isSecure ?? false,
    list_logo: s.listLogo ?? null,
    created_at: s.createdAt ?? new Date('2025-01-01T00:00:00Z'),
    updated_at: s.updatedAt ?? new Date('2025-01-01T00:00:00Z'),
  }));
  for (let i = 0; i < rows.length; i += 500)
    await t.db.client.knex(`${t.schema}.tokens`).insert(rows.slice(i, i + 500));
  await t.api.sync(); // the API answers from its read model, which follows the database asynchronously
}

export async function seedPrices(t: TestApi, rows: { token: string; price: number; at: Date }[]): Promise<void> {
  const hour = (d: Date) => new Date(Math.floor(d.getTime() / 3_600_000) * 3_600_000);
  for (let i = 0; i < rows.length; i += 1_000) {
    await t.db.client
      .knex(`${t.schema}.prices`)
      .insert(
        rows
          .slice(i, i + 1_000)
          .map((r) => ({ token: r.token.toLowerCase(), hour: hour(r.at), price: r.price, observed_at: r.at })),
      );
  }
  await t.api.sync();
}

export const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
