import { randomBytes } from 'node:crypto';
import type { DbClient } from '../../common/db/client.js';
import { displayPrefix, generateApiKey, hashApiKey } from './secret.js';

export interface ApiKeyLimits {
  /** Units per second refilled into this key's bucket; undefined: the public RPC_RATE_LIMIT_PER_SECOND. */
  ratePerSecond?: number;
  /** Bucket size; undefined: the public RPC_RATE_LIMIT_BURST (or ratePerSecond when only that is set). */
  burst?: number;
  /** Methods this key may call; undefined: every method the endpoint serves. */
  methods?: string[];
}

export interface ApiKeyRecord extends ApiKeyLimits {
  id: string;
  name: string;
  keyPrefix: string;
  createdAt: Date;
  revokedAt?: Date;
}

interface Row {
  id: string;
  name: string;
  key_hash: string;
  key_prefix: string;
  rate_per_second: number | null;
  burst: number | null;
  methods: string[] | string | null;
  created_at: Date | string;
  revoked_at: Date | string | null;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function toRecord(r: Row): ApiKeyRecord {
  const methods = typeof r.methods === 'string' ? (JSON.parse(r.methods) as string[]) : (r.methods ?? undefined);
  return {
    id: r.id,
    name: r.name,
    keyPrefix: r.key_prefix,
    ratePerSecond: r.rate_per_second ?? undefined,
    burst: r.burst ?? undefined,
    methods,
    createdAt: new Date(r.created_at),
    revokedAt: r.revoked_at === null ? undefined : new Date(r.revoked_at),
  };
}

/** The api_keys table: what `l2stack rpc keys` manages and every replica reads (through KeyRegistry). */
export class ApiKeyStore {
  private readonly table: string;

  constructor(
    private readonly db: DbClient,
    schema: string,
  ) {
    this.table = `${schema}.api_keys`;
  }

  /** Stores a new key and returns it: the only time the secret exists outside the client's hands. */
  async create(name: string, limits: ApiKeyLimits = {}): Promise<{ record: ApiKeyRecord; key: string }> {
    if (!NAME.test(name))
      throw new Error(
        `the key name must be 1-64 characters of letters, digits, ".", "_" or "-", starting with a letter or digit; got "${name.slice(0, 80)}"`,
      );
    if (limits.ratePerSecond !== undefined && !(limits.ratePerSecond > 0 && Number.isFinite(limits.ratePerSecond)))
      throw new Error(`the rate must be a positive number of units per second, got ${limits.ratePerSecond}`);
    if (limits.burst !== undefined && !(limits.burst >= 1 && Number.isFinite(limits.burst)))
      throw new Error(`the burst must be a number ≥ 1, got ${limits.burst}`);
    if (limits.methods !== undefined && limits.methods.length === 0)
      throw new Error('a key with an allow-list needs at least one method');
    const key = generateApiKey();
    const id = `k_${randomBytes(6).toString('hex')}`;
    const rows = await this.db.query('rpc.key_create', async (k) => {
      const existing = await k(this.table).where({ name }).first('id');
      if (existing)
        throw new Error(
          `a key named "${name}" already exists (${(existing as { id: string }).id}); revoke it or pick another name`,
        );
      return (await k(this.table)
        .insert({
          id,
          name,
          key_hash: hashApiKey(key),
          key_prefix: displayPrefix(key),
          rate_per_second: limits.ratePerSecond ?? null,
          burst: limits.burst ?? null,
          methods: limits.methods ? JSON.stringify(limits.methods) : null,
        })
        .returning('*')) as Row[];
    });
    return { record: toRecord(rows[0]!), key };
  }

  async list(): Promise<ApiKeyRecord[]> {
    const rows = (await this.db.query('rpc.key_list', (k) => k(this.table).select('*').orderBy('created_at'))) as Row[];
    return rows.map(toRecord);
  }

  /** Revokes by id or name; resolves the revoked record, or undefined when there is no such live key. */
  async revoke(idOrName: string): Promise<ApiKeyRecord | undefined> {
    const rows = (await this.db.query('rpc.key_revoke', (k) =>
      k(this.table)
        .where((q) => q.where({ id: idOrName }).orWhere({ name: idOrName }))
        .whereNull('revoked_at')
        .update({ revoked_at: k.fn.now() })
        .returning('*'),
    )) as Row[];
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  /** The key whose secret hashes to `hash`, revoked or not (the registry tells the two apart). */
  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const row = (await this.db.query('rpc.key_find_by_hash', (k) =>
      k(this.table).where({ key_hash: hash }).first(),
    )) as Row | undefined;
    return row ? toRecord(row) : undefined;
  }
}
