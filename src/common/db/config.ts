import { env, parseEnv } from '../config/env.js';

/** The DATABASE_* variables (interface area C, shared by every service). */
export const databaseEnv = {
  DATABASE_HOST: env.string(),
  DATABASE_PORT: env.integer({ min: 1, max: 65535, default: 5432 }),
  DATABASE_NAME: env.string({ default: 'l2stack' }),
  DATABASE_USER: env.string(),
  DATABASE_PASSWORD: env.string({ sensitivity: 'secret' }),
  DATABASE_SSL: env.boolean({ default: false }),
  DATABASE_SSL_CA_PATH: env.string(),
  DATABASE_SSL_REJECT_UNAUTHORIZED: env.boolean({ default: false }),
  /** Ours: where embedded PGlite keeps its files when DATABASE_HOST is unset; unset = in memory. */
  DATABASE_PGLITE_DIR: env.string(),
};

export type DatabaseConfig =
  | { kind: 'pglite'; dataDir: string | undefined }
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
  if (values.DATABASE_HOST === undefined) return { kind: 'pglite', dataDir: values.DATABASE_PGLITE_DIR };
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
