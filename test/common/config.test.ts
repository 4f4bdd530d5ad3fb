import { describe, expect, it } from 'vitest';
import { ConfigError, env, parseEnv, redactUrl } from '../../src/common/config/env.js';
import { loadDatabaseConfig } from '../../src/common/db/config.js';

const specs = {
  ENABLED: env.boolean({ required: true }),
  PORT: env.integer({ min: 1, max: 65535, default: 9090 }),
  RPC_URL: env.url({ required: true }),
  CONTRACT: env.address({ required: true }),
  PRIVATE_KEY: env.hex32({ sensitivity: 'secret' }),
  MODE: env.oneOf(['a', 'b'] as const, { default: 'a' }),
  CAP: env.bigint({ min: 1n }),
};

const valid = {
  ENABLED: 'true',
  RPC_URL: 'https://node.example/v3/secret-api-key',
  CONTRACT: '0x00000000000000000000000000000000000000AA',
  PRIVATE_KEY: `0x${'ab'.repeat(32)}`,
};

describe('parseEnv', () => {
  it('behavior: parses typed values and applies defaults', () => {
    const { values } = parseEnv(specs, { ...valid, CAP: '1000000000000000000000' });
    expect(values).toEqual({
      ENABLED: true,
      PORT: 9090,
      RPC_URL: valid.RPC_URL,
      CONTRACT: '0x00000000000000000000000000000000000000aa',
      PRIVATE_KEY: `0x${'ab'.repeat(32)}`,
      MODE: 'a',
      CAP: 1000000000000000000000n,
    });
    expect(Object.isFrozen(values)).toBe(true);
  });

  it('error: reports every problem at once, by variable name, never echoing a secret', () => {
    let error: unknown;
    try {
      parseEnv(specs, {
        ENABLED: 'yes',
        PORT: '70000',
        CONTRACT: '0x12',
        PRIVATE_KEY: 'not-a-key-but-secret',
        MODE: 'c',
        CAP: '0',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toMatchInlineSnapshot(`
      [
        "ENABLED: expected a boolean (true or false), got "yes"",
        "PORT: expected an integer from 1 to 65535, got "70000"",
        "RPC_URL: required: set it to an absolute http or https URL",
        "CONTRACT: expected a 0x-prefixed 20-byte hex address, got "0x12"",
        "PRIVATE_KEY: expected 0x followed by 64 hex digits (32 bytes), got "[redacted]"",
        "MODE: expected one of a, b, got "c"",
        "CAP: expected an integer >= 1 (decimal digits), got "0"",
      ]
    `);
    expect((error as Error).message).not.toContain('not-a-key-but-secret');
  });

  it('behavior: an empty string counts as unset', () => {
    const { values } = parseEnv(specs, { ...valid, PORT: '', MODE: '  ' });
    expect(values.PORT).toBe(9090);
    expect(values.MODE).toBe('a');
  });

  it('behavior: the effective config redacts secrets and URL paths', () => {
    const { effective } = parseEnv(specs, valid);
    expect(effective.PRIVATE_KEY).toBe('[redacted]');
    expect(effective.RPC_URL).toBe('https://node.example/[redacted]');
    expect(JSON.stringify(effective)).not.toContain('secret-api-key');
    expect(effective.ENABLED).toBe('true');
  });

  it('args: redactUrl keeps only scheme, host and port', () => {
    expect(redactUrl('http://user:pw@127.0.0.1:8545')).toBe('http://127.0.0.1:8545/[redacted]');
    expect(redactUrl('http://127.0.0.1:8545')).toBe('http://127.0.0.1:8545');
    expect(redactUrl('nonsense')).toBe('[redacted]');
  });
});

describe('database config', () => {
  it('behavior: no DATABASE_HOST selects embedded PGlite', () => {
    expect(loadDatabaseConfig({})).toEqual({ kind: 'pglite', dataDir: undefined, sharedBuffersMb: 16 });
  });

  it('error: DATABASE_PGLITE_SHARED_BUFFERS_MB outside 1-1024 is named', () => {
    expect(loadDatabaseConfig({ DATABASE_PGLITE_SHARED_BUFFERS_MB: '64' })).toMatchObject({
      kind: 'pglite',
      sharedBuffersMb: 64,
    });
    expect(() => loadDatabaseConfig({ DATABASE_PGLITE_SHARED_BUFFERS_MB: '0' })).toThrow(
      /DATABASE_PGLITE_SHARED_BUFFERS_MB: expected an integer from 1 to 1024/,
    );
    expect(() => loadDatabaseConfig({ DATABASE_PGLITE_SHARED_BUFFERS_MB: '16MB' })).toThrow(
      /DATABASE_PGLITE_SHARED_BUFFERS_MB/,
    );
  });

  it('behavior: DATABASE_HOST selects Postgres; SSL settings only when DATABASE_SSL is true', () => {
    expect(loadDatabaseConfig({ DATABASE_HOST: 'db', DATABASE_SSL_CA_PATH: '/ca.pem' })).toEqual({
      kind: 'postgres',
      host: 'db',
      port: 5432,
      database: 'l2stack',
      user: undefined,
      password: undefined,
      ssl: undefined,
    });
    const withSsl = loadDatabaseConfig({ DATABASE_HOST: 'db', DATABASE_SSL: 'true', DATABASE_SSL_CA_PATH: '/ca.pem' });
    expect(withSsl.kind === 'postgres' && withSsl.ssl).toEqual({ caPath: '/ca.pem', rejectUnauthorized: false });
  });

  it('error: a bad DATABASE_PORT is named', () => {
    expect(() => loadDatabaseConfig({ DATABASE_HOST: 'db', DATABASE_PORT: 'abc' })).toThrow(
      /DATABASE_PORT: expected an integer from 1 to 65535/,
    );
  });
});

describe('parseEnv cross-variable rules', () => {
  const specs = { A: env.string(), B: env.string(), PORT: env.integer({ min: 1 }) };
  const needBoth = (v: { A?: string; B?: string }) =>
    (v.A === undefined) !== (v.B === undefined) ? ['A and B: set both or neither'] : [];

  it('error: cross-variable problems are reported together with per-variable ones', () => {
    expect(() => parseEnv(specs, { A: 'x', PORT: 'nope' }, needBoth)).toThrow(
      new ConfigError(['PORT: expected an integer >= 1, got "nope"', 'A and B: set both or neither']),
    );
  });
});
