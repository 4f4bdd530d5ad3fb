import { resolve } from 'node:path';
import { env, parseEnv } from '../config/env.js';

/** DATABASE_PGLITE_DIR value for an embedded database in memory, gone when the process ends (PGlite's own spelling). */
export const PGLITE_MEMORY = 'memory://';

/** DATABASE_PGLITE_SHARED_BUFFERS_MB's default. */
export const PGLITE_SHARED_BUFFERS_MB = 16;

/** The DATABASE_* variables (interface area C, shared by every service). */
export const databaseEnv = {
  DATABASE_HOST: env
    .string()
    .describe('PostgreSQL host; unset = embedded PGlite (DATABASE_PGLITE_DIR). Each service keeps its own schema.'),
  DATABASE_PORT: env.integer({ min: 1, max: 65535, default: 5432 }).describe('PostgreSQL port.'),
  DATABASE_NAME: env.string({ default: 'l2stack' }).describe('PostgreSQL database.'),
  DATABASE_USER: env.string().describe('PostgreSQL user.'),
  DATABASE_PASSWORD: env.string({ sensitivity: 'secret' }).describe('PostgreSQL password.'),
  DATABASE_SSL: env
    .boolean({ default: false })
    .describe('Connect to PostgreSQL with TLS; the two variables below apply only then.'),
  DATABASE_SSL_CA_PATH: env.string().describe('CA certificate file (PEM) the server certificate is checked against.'),
  DATABASE_SSL_REJECT_UNAUTHORIZED: env
    .boolean({ default: false })
    .describe('Refuse a server certificate that does not verify.'),
  DATABASE_PGLITE_DIR: env
    .string()
    .describe(
      'PGlite directory, one process each; unset = .l2stack/pglite/<command> (dev, devnet: memory); memory:// = in memory.',
    ),
  /**
   * Postgres' default (128) cost ~0.5 s at every open here (its buffer pool is set up in WebAssembly, ~4 ms per MB)
   * for a working set that is a few MB; a page outside the pool is one read from the page cache (or memory) away.
   */
  DATABASE_PGLITE_SHARED_BUFFERS_MB: env
    .integer({ min: 1, max: 1024, default: PGLITE_SHARED_BUFFERS_MB })
    .describe("PGlite's shared_buffers (MB).")
    .testOnly(),
};

export type DatabaseConfig =
  | {
      kind: 'pglite';
      /** An absolute directory, PGLITE_MEMORY, or undefined: not chosen, the opener's default applies. */
      dataDir: string | undefined;
      /** DATABASE_PGLITE_SHARED_BUFFERS_MB; undefined: PGLITE_SHARED_BUFFERS_MB. */
      sharedBuffersMb?: number;
    }
  | {
      kind: 'postgres';
      host: string;
      port: number;
      database: string;
      user: string | undefined;
      password: string | undefined;
      /** Present only when DATABASE_SSL is true, as the interface says. */
      ssl: { caPath: string | undefined; rejectUnauthorized: boolean } | undefined;
    };

type DatabaseValues = ReturnType<typeof parseEnv<typeof databaseEnv>>['values'];

/** The one place that picks the database kind; everything downstream branches on `kind`. */
export function databaseConfigFrom(values: DatabaseValues): DatabaseConfig {
  if (values.DATABASE_HOST === undefined) {
    return {
      kind: 'pglite',
      dataDir: pgliteDir(values.DATABASE_PGLITE_DIR),
      sharedBuffersMb: values.DATABASE_PGLITE_SHARED_BUFFERS_MB,
    };
  }
  return {
    kind: 'postgres',
    host: values.DATABASE_HOST,
    port: values.DATABASE_PORT,
    database: values.DATABASE_NAME,
    user: values.DATABASE_USER,
    password: values.DATABASE_PASSWORD,
    ssl: values.DATABASE_SSL
      ? { caPath: values.DATABASE_SSL_CA_PATH, rejectUnauthorized: values.DATABASE_SSL_REJECT_UNAUTHORIZED }
      : undefined,
  };
}

export function loadDatabaseConfig(source: Record<string, string | undefined>): DatabaseConfig {
  return databaseConfigFrom(parseEnv(databaseEnv, source).values);
}

function pgliteDir(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return value.startsWith(PGLITE_MEMORY) ? PGLITE_MEMORY : resolve(value);
}

/** Where a service command keeps embedded PGlite unless DATABASE_PGLITE_DIR says otherwise. */
export function defaultPgliteDir(command: string): string {
  return resolve('.l2stack', 'pglite', command);
}

/**
 * What a database config opens, for logs and messages: "PostgreSQL host:port/db", "PGlite in memory", "PGlite in DIR".
 */
export function describeDatabase(config: DatabaseConfig, pgliteDefault: string = PGLITE_MEMORY): string {
  if (config.kind === 'postgres') return `PostgreSQL ${config.host}:${config.port}/${config.database}`;
  const dir = config.dataDir ?? pgliteDefault;
  return dir === PGLITE_MEMORY ? 'embedded PGlite in memory' : `embedded PGlite in ${dir}`;
}
