import type { Command } from './command.js';
import { UsageError } from './command.js';
import { stringFlag } from './args.js';
import { commaList } from '../common/config/env.js';
import { readProcessEnv } from '../common/config/process-env.js';
import { defaultPgliteDir, loadDatabaseConfig } from '../common/db/config.js';
import type { DbClient } from '../common/db/client.js';
import type { ApiKeyLimits, ApiKeyRecord, ApiKeyStore } from '../rpc/keys/store.js';

/** The endpoint's schema (src/rpc/config.ts: dbSchema). */
const RPC_SCHEMA = 'rpc';

function positiveNumberFlag(name: string, raw: unknown, min: number): number | undefined {
  if (raw === undefined) return undefined;
  const s = String(raw);
  const n = Number(s);
  if (!/^\d+(\.\d+)?$/.test(s) || !(n >= min)) throw new UsageError(`--${name} must be a number >= ${min}, got "${s}"`);
  return n;
}

/** Checked `keys create` input (exported for tests): the method list is checked against the spec's methods. */
export function parseCreateArgs(
  values: Record<string, unknown>,
  positionals: string[],
  specMethods: readonly string[],
): { name: string; limits: ApiKeyLimits } {
  const name = positionals[0];
  if (name === undefined) throw new UsageError('name the key: l2stack rpc keys create <name>');
  const ratePerSecond = positiveNumberFlag('rate', values.rate, 0.001);
  const burst = positiveNumberFlag('burst', values.burst, 1);
  const rawMethods = stringFlag(values.methods);
  let methods: string[] | undefined;
  if (rawMethods !== undefined) {
    methods = [...new Set(commaList(rawMethods))];
    if (methods.length === 0) throw new UsageError('--methods needs at least one method name');
    const unknown = methods.filter((m) => !specMethods.includes(m));
    if (unknown.length > 0)
      throw new UsageError(`--methods names methods the endpoint does not serve: ${unknown.join(', ')}`);
  }
  return { name, limits: { ratePerSecond, burst, methods } };
}

function describe(r: ApiKeyRecord): string {
  const rate = r.ratePerSecond === undefined ? 'public rate' : `${r.ratePerSecond}/s`;
  const burst = r.burst === undefined ? '' : ` burst ${r.burst}`;
  const methods = r.methods ? r.methods.join(',') : 'all methods';
  const state = r.revokedAt ? `revoked ${r.revokedAt.toISOString()}` : 'active';
  return `${r.id}  ${r.name}  ${r.keyPrefix}  ${rate}${burst}  ${methods}  created ${r.createdAt.toISOString()}  ${state}`;
}

/** Opens the endpoint's database (its own embedded directory by default) with the endpoint's tables. */
async function withStore<T>(fn: (store: ApiKeyStore) => Promise<T>): Promise<T> {
  const database = loadDatabaseConfig(readProcessEnv());
  const [{ createDbClient }, { migrate }, { rpcMigrations }, { ApiKeyStore }] = await Promise.all([
    import('../common/db/client.js'),
    import('../common/db/migrations.js'),
    import('../rpc/migrations.js'),
    import('../rpc/keys/store.js'),
  ]);
  // On PGlite this is the endpoint's directory, refused while the endpoint runs (one process per
  // directory); keys for a running fleet are managed on its PostgreSQL database.
  const db: DbClient = await createDbClient(database, { poolMax: 1, pgliteDefault: defaultPgliteDir('rpc') });
  try {
    await db.query('rpc.migrate', (k) => migrate(k, RPC_SCHEMA, rpcMigrations));
    return await fn(new ApiKeyStore(db, RPC_SCHEMA));
  } finally {
    await db.close();
  }
}

const createCommand: Command = {
  name: 'create',
  summary: 'create an API key and print it once (only its hash is stored)',
  usage: '<name> [--rate R] [--burst B] [--methods m1,m2]',
  maxPositionals: 1,
  options: { rate: { type: 'string' }, burst: { type: 'string' }, methods: { type: 'string' } },
  optionHelp: [
    '<name>           a label for the key (unique; letters, digits, ".", "_", "-")',
    '--rate R         units per second for this key (default: RPC_RATE_LIMIT_PER_SECOND)',
    '--burst B        bucket size for this key (default: RPC_RATE_LIMIT_BURST, or 2 × --rate)',
    '--methods LIST   comma-separated methods this key may call (default: every method served)',
    'Clients send the key as POST /v1/<key> or in the x-api-key header. Uses DATABASE_*.',
  ],
  async run({ values, positionals }) {
    const { loadRpcSpec } = await import('../rpc/spec.js');
    const served = (await loadRpcSpec()).dereferenced.methods.map((m) => m.name);
    const { name, limits } = parseCreateArgs(values, positionals, served);
    const { record, key } = await withStore((store) => store.create(name, limits));
    process.stderr.write(`created ${record.id} (${record.name}); the key is printed once, on stdout; store it now\n`);
    process.stdout.write(`${key}\n`);
    return 0;
  },
};

const listCommand: Command = {
  name: 'list',
  summary: 'list API keys (id, name, prefix, limits, state); never the secrets',
  options: { json: { type: 'boolean' } },
  optionHelp: ['--json   one JSON document instead of lines'],
  async run({ values }) {
    const records = await withStore((store) => store.list());
    if (values.json) process.stdout.write(`${JSON.stringify(records, null, 2)}\n`);
    else if (records.length === 0) process.stdout.write('no API keys\n');
    else for (const r of records) process.stdout.write(`${describe(r)}\n`);
    return 0;
  },
};

const revokeCommand: Command = {
  name: 'revoke',
  summary: 'revoke an API key by id or name (every replica refuses it within a second)',
  usage: '<id|name>',
  maxPositionals: 1,
  async run({ positionals }) {
    const which = positionals[0];
    if (which === undefined) throw new UsageError('name the key to revoke: its id (k_…) or its name');
    const revoked = await withStore((store) => store.revoke(which));
    if (!revoked) throw new UsageError(`no active key with id or name "${which}" (see l2stack rpc keys list)`);
    process.stdout.write(`revoked ${revoked.id} (${revoked.name})\n`);
    return 0;
  },
};

export const keysCommand: Command = {
  name: 'keys',
  summary: 'manage API keys of the private tier: create, list, revoke',
  subcommands: [createCommand, listCommand, revokeCommand],
  async run() {
    throw new UsageError('choose a subcommand: create, list or revoke');
  },
};
