import { env, parseEnv } from './env.js';
import { LOG_LEVELS } from '../log.js';
import { databaseEnv, databaseConfigFrom, type DatabaseConfig } from '../db/config.js';

/** Variables every service reads: the log level and the database. */
export const commonEnv = {
  LOG_LEVEL: env.oneOf(LOG_LEVELS, { default: 'info' }).describe('Least severe level logged (JSON lines on stdout).'),
  ...databaseEnv,
};

export interface CommonConfig {
  logLevel: (typeof LOG_LEVELS)[number];
  database: DatabaseConfig;
}

export function loadCommonConfig(source: Record<string, string | undefined>) {
  const { values, effective } = parseEnv(commonEnv, source);
  const config: CommonConfig = { logLevel: values.LOG_LEVEL, database: databaseConfigFrom(values) };
  return { config, effective };
}
