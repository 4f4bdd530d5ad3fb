import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/common/config/env.js';
import { loadRelayerConfig, parseRelayerEnv } from '../../src/relayer/config.js';

const KEY = `0x${'11'.repeat(32)}`;
const base: Record<string, string> = {
  L1_L2_AUTO_CLAIM_ENABLED: 'true',
  L2_L1_AUTO_CLAIM_ENABLED: 'true',
  DB_CLEANER_ENABLED: 'false',
  L1_CONTRACT_ADDRESS: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  L1_RPC_URL: 'http://127.0.0.1:8545',
  L2_CONTRACT_ADDRESS: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
  L2_RPC_URL: 'http://127.0.0.1:8546',
  L1_SIGNER_TYPE: 'private-key',
  L1_SIGNER_PRIVATE_KEY: KEY,
  L2_SIGNER_TYPE: 'private-key',
  L2_SIGNER_PRIVATE_KEY: KEY,
};

function problems(env: Record<string, string | undefined>): string[] {
  try {
    loadRelayerConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

const without = (...names: string[]) => Object.fromEntries(Object.entries(base).filter(([k]) => !names.includes(k)));

describe('relayer config', () => {
  it('behavior: a minimal environment gives the documented defaults', () => {
    const c = loadRelayerConfig(base);
    expect(c.l1.contractAddress).toBe('0x5fbdb2315678afecb367f032d93f642f64180aa3');
    expect(c.l1.listener).toEqual({
      blockConfirmation: 4,
      initialFromBlock: undefined,
      intervalMs: 4000,
      receiptPollingIntervalMs: 4000,
      maxBlocksToFetchLogs: 1000,
      eventFilters: undefined,
    });
    expect(c.l1ToL2).toEqual({
      autoClaimEnabled: true,
      calldataEnabled: false,
      eoaEnabled: false,
      sponsoringEnabled: false,
    });
    expect(c.claiming).toMatchObject({
      maxClaimGasLimit: 500_000n,
      maxFeePerGasCap: 100_000_000_000n,
      profitMargin: '1',
      retryDelaySeconds: 30,
      gasEstimationPercentile: 20,
    });
    expect(c.api).toEqual({
      port: 9090,
      host: '127.0.0.1',
      http: {
        maxConnections: 4096,
        maxConnectionsPerClient: 256,
        fdReserve: 1_024,
        headersTimeoutMs: 20_000,
        requestTimeoutMs: 30_000,
        keepAliveTimeoutMs: 65_000,
      },
      rateLimit: { perSecond: 20, burst: 40, trustedProxyHops: 0 },
    });
    expect(c.cleaner).toEqual({ enabled: false, intervalMs: 43_200_000, daysBeforeNowToDelete: 14 });
    expect(c.database).toEqual({ kind: 'pglite', dataDir: undefined, sharedBuffersMb: 16 });
    expect(c.l1.signer).toEqual({ type: 'private-key', privateKey: KEY });
    expect(Object.isFrozen(c.l1.listener)).toBe(true);
  });

  it('behavior: the effective configuration redacts secrets', () => {
    const { effective } = parseRelayerEnv({
      ...base,
      L1_RPC_URL: 'https://user:pw@rpc.example.com/v3/apikey',
      DATABASE_PASSWORD: 'hunter2',
    });
    expect(effective.L1_SIGNER_PRIVATE_KEY).toBe('[redacted]');
    expect(effective.DATABASE_PASSWORD).toBe('[redacted]');
    expect(effective.L1_RPC_URL).toBe('https://rpc.example.com/[redacted]');
    expect(JSON.stringify(effective)).not.toContain('11111111');
  });

  it('behavior: API_ADMIN_TOKEN is a secret of at least 32 characters: redacted in the effective configuration, never echoed when refused; the operations settings have their defaults', () => {
    const token = 'z'.repeat(31);
    expect(problems({ ...base, API_ADMIN_TOKEN: token })).toEqual([
      'API_ADMIN_TOKEN: must be at least 32 characters (got 31); e.g. openssl rand -hex 32',
    ]);
    const { config, effective } = parseRelayerEnv({ ...base, API_ADMIN_TOKEN: `${token}zz` });
    expect([config.api.adminToken, effective.API_ADMIN_TOKEN]).toEqual([`${token}zz`, '[redacted]']);
    expect(loadRelayerConfig(base).api.adminToken).toBeUndefined();
    expect(loadRelayerConfig(base).operations).toEqual({
      stuckAfterSeconds: 600,
      pinCheckIntervalMs: 30_000,
      resimulate: { enabled: true, delaySeconds: 60, maxDelaySeconds: 3_600, perIteration: 20 },
    });
  });

  it('args: LISTENER_BLOCK_CONFIRMATION and LISTENER_INITIAL_FROM_BLOCK are used only when >= 0', () => {
    const c = loadRelayerConfig({
      ...base,
      L1_LISTENER_BLOCK_CONFIRMATION: '-1',
      L2_LISTENER_BLOCK_CONFIRMATION: '0',
      L1_LISTENER_INITIAL_FROM_BLOCK: '-1',
      L2_LISTENER_INITIAL_FROM_BLOCK: '0',
    });
    expect(c.l1.listener.blockConfirmation).toBe(4);
    expect(c.l2.listener.blockConfirmation).toBe(0);
    expect(c.l1.listener.initialFromBlock).toBeUndefined();
    expect(c.l2.listener.initialFromBlock).toBe(0);
    expect(loadRelayerConfig({ ...base, L1_LISTENER_INITIAL_FROM_BLOCK: '1234' }).l1.listener.initialFromBlock).toBe(
      1234,
    );
  });

  it('args: the event-filter object exists only when a filter is set', () => {
    const c = loadRelayerConfig({
      ...base,
      L1_EVENT_FILTER_TO_ADDRESS: '0x00000000000000000000000000000000000000AA',
      L2_EVENT_FILTER_CALLDATA: 'calldata.amount > 0',
      L2_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE: 'record(uint256 amount, bytes note)',
    });
    expect(c.l1.listener.eventFilters).toEqual({
      fromAddress: undefined,
      toAddress: '0x00000000000000000000000000000000000000aa',
      calldata: undefined,
    });
    expect(c.l2.listener.eventFilters).toEqual({
      fromAddress: undefined,
      toAddress: undefined,
      calldata: { expression: 'calldata.amount > 0', functionInterface: 'function record(uint256 amount, bytes note)' },
    });
  });

  it('args: TLS settings only with a keystore path; DATABASE_SSL_* only when DATABASE_SSL is true', () => {
    const db = loadRelayerConfig({
      ...base,
      DATABASE_HOST: 'db',
      DATABASE_SSL_CA_PATH: '/ca.pem',
      DATABASE_SSL_REJECT_UNAUTHORIZED: 'true',
    }).database;
    expect(db).toMatchObject({ kind: 'postgres', ssl: undefined });
    const ssl = loadRelayerConfig({
      ...base,
      DATABASE_HOST: 'db',
      DATABASE_SSL: 'true',
      DATABASE_SSL_CA_PATH: '/ca.pem',
    }).database;
    expect(ssl).toMatchObject({ kind: 'postgres', ssl: { caPath: '/ca.pem', rejectUnauthorized: false } });
    const remote = {
      ...base,
      L1_SIGNER_TYPE: 'remote-signer',
      L1_SIGNER_PRIVATE_KEY: '',
      L1_REMOTE_SIGNER_ENDPOINT: 'https://signer:9000',
      L1_REMOTE_SIGNER_PUBLIC_KEY: '0x04ab',
    };
    expect(loadRelayerConfig(remote).l1.signer).toEqual({
      type: 'remote-signer',
      endpoint: 'https://signer:9000',
      publicKey: '0x04ab',
      tls: undefined,
    });
    const tls = {
      L1_REMOTE_SIGNER_TLS_KEYSTORE_PATH: '/ks.p12',
      L1_REMOTE_SIGNER_TLS_KEYSTORE_PASSWORD: 'a',
      L1_REMOTE_SIGNER_TLS_TRUSTSTORE_PATH: '/ts.p12',
      L1_REMOTE_SIGNER_TLS_TRUSTSTORE_PASSWORD: 'b',
    };
    expect(loadRelayerConfig({ ...remote, ...tls }).l1.signer).toMatchObject({
      tls: { keystorePath: '/ks.p12', truststorePath: '/ts.p12' },
    });
  });

  it('args: *_CLAIM_VIA_ADDRESS is taken per chain (lower-cased) and absent when unset', () => {
    const c = loadRelayerConfig({ ...base, L2_CLAIM_VIA_ADDRESS: '0x00000000000000000000000000000000000000BB' });
    expect([c.l1.claimViaAddress, c.l2.claimViaAddress]).toEqual([
      undefined,
      '0x00000000000000000000000000000000000000bb',
    ]);
  });

  it('behavior: a signer is neither required nor built for a disabled direction', () => {
    const c = loadRelayerConfig({ ...without('L1_SIGNER_PRIVATE_KEY'), L2_L1_AUTO_CLAIM_ENABLED: 'false' });
    expect(c.l1.signer).toBeUndefined();
    expect(c.l2.signer).toBeDefined();
  });

  describe('extra signer keys (*_SIGNER_PRIVATE_KEYS)', () => {
    const key = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

    it('args: unset, there are no extra signers and the single key works unchanged', () => {
      const c = loadRelayerConfig(base);
      expect([c.l1.extraSigners, c.l2.extraSigners]).toEqual([[], []]);
      expect(c.l2.signer).toEqual({ type: 'private-key', privateKey: KEY });
    });

    it('behavior: the listed keys are extra private-key signers beside *_SIGNER_PRIVATE_KEY, in order, lower-cased, blanks around commas ignored', () => {
      const c = loadRelayerConfig({
        ...base,
        L2_SIGNER_PRIVATE_KEYS: ` ${key(2)}, ${key(3).toUpperCase().replace('0X', '0x')} ,${key(4)}`,
      });
      expect(c.l2.signer).toEqual({ type: 'private-key', privateKey: KEY });
      expect(c.l2.extraSigners).toEqual([2, 3, 4].map((n) => ({ type: 'private-key', privateKey: key(n) })));
      expect(c.l1.extraSigners).toEqual([]);
    });

    it('behavior: the list is a secret: redacted in the effective configuration, never echoed in a refusal', () => {
      const secret = `0x${'ab'.repeat(32)}`;
      const { effective } = parseRelayerEnv({ ...base, L1_SIGNER_PRIVATE_KEYS: `${key(7)},${secret}` });
      expect(effective.L1_SIGNER_PRIVATE_KEYS).toBe('[redacted]');
      expect(JSON.stringify(effective)).not.toContain('abab');
      const refused = problems({ ...base, L1_SIGNER_PRIVATE_KEYS: `${secret},${secret.slice(0, 60)},${secret}` });
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.join('\n')).not.toMatch(/abab|0x[0-9a-f]{16}/);
    });

    it('behavior: a disabled direction does not build the extra signers (its key list is still checked)', () => {
      const c = loadRelayerConfig({ ...base, L2_L1_AUTO_CLAIM_ENABLED: 'false', L1_SIGNER_PRIVATE_KEYS: key(5) });
      expect(c.l1.signer).toBeUndefined();
      expect(c.l1.extraSigners).toEqual([]);
      expect(problems({ ...base, L2_L1_AUTO_CLAIM_ENABLED: 'false', L1_SIGNER_PRIVATE_KEYS: 'nope' })).toEqual([
        'L1_SIGNER_PRIVATE_KEYS: entry 1 of 1 is malformed (not 0x followed by 64 hex digits): set it to a comma-separated list of at most 16 distinct private keys, each 0x followed by 64 hex digits (32 bytes)',
      ]);
    });

    const ASK =
      ': set it to a comma-separated list of at most 16 distinct private keys, each 0x followed by 64 hex digits (32 bytes)';
    const refusals: { name: string; env: Record<string, string>; expected: string[] }[] = [
      {
        name: 'malformed and empty entries, each named by its position',
        env: { L2_SIGNER_PRIVATE_KEYS: `${key(2)},0x1234,,${key(3)}zz` },
        expected: [
          `L2_SIGNER_PRIVATE_KEYS: entry 2 of 4 is malformed (not 0x followed by 64 hex digits); entry 3 of 4 is empty; entry 4 of 4 is malformed (not 0x followed by 64 hex digits)${ASK}`,
        ],
      },
      {
        name: 'a key outside the secp256k1 range (zero, or at least the curve order)',
        env: {
          L1_SIGNER_PRIVATE_KEYS: `${key(0)},0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141,${key(9)}`,
        },
        expected: [
          `L1_SIGNER_PRIVATE_KEYS: entry 1 of 3 is not a valid secp256k1 private key (0, or not below the curve order); entry 2 of 3 is not a valid secp256k1 private key (0, or not below the curve order)${ASK}`,
        ],
      },
      {
        name: 'duplicates: of an earlier entry (in any case) or of *_SIGNER_PRIVATE_KEY',
        env: { L2_SIGNER_PRIVATE_KEYS: `${key(2)},${KEY.toUpperCase().replace('0X', '0x')},${key(2)}` },
        expected: [
          `L2_SIGNER_PRIVATE_KEYS: entry 2 of 3 repeats L2_SIGNER_PRIVATE_KEY; entry 3 of 3 repeats entry 1${ASK}`,
        ],
      },
      {
        name: 'more keys than the maximum (16)',
        env: { L1_SIGNER_PRIVATE_KEYS: Array.from({ length: 17 }, (_, i) => key(100 + i)).join(',') },
        expected: [`L1_SIGNER_PRIVATE_KEYS: lists 17 keys, more than the 16 allowed${ASK}`],
      },
      {
        name: 'a key list with a signer type other than private-key',
        env: { L2_SIGNER_TYPE: 'kms', L2_KMS_KEY_ID: 'alias/relayer', L2_SIGNER_PRIVATE_KEYS: key(2) },
        expected: ['L2_SIGNER_PRIVATE_KEYS: only valid when L2_SIGNER_TYPE is private-key (it is kms): unset it'],
      },
    ];
    for (const row of refusals) {
      it(`error: ${row.name}`, () => {
        expect(problems({ ...base, ...row.env })).toEqual(row.expected);
      });
    }

    it('args: exactly 16 keys are accepted', () => {
      expect(
        loadRelayerConfig({
          ...base,
          L1_SIGNER_PRIVATE_KEYS: Array.from({ length: 16 }, (_, i) => key(100 + i)).join(','),
        }).l1.extraSigners,
      ).toHaveLength(16);
    });
  });

  const table: { name: string; env: Record<string, string | undefined>; expected: string[] }[] = [
    {
      name: 'empty environment: every required variable, at once',
      env: {},
      expected: [
        'L1_L2_AUTO_CLAIM_ENABLED: required: set it to a boolean (true or false)',
        'L2_L1_AUTO_CLAIM_ENABLED: required: set it to a boolean (true or false)',
        'L1_CONTRACT_ADDRESS: required: set it to a 0x-prefixed 20-byte hex address',
        'L1_RPC_URL: required: set it to an absolute http or https URL',
        'L1_SIGNER_TYPE: required: set it to one of private-key, remote-signer, kms',
        'L2_CONTRACT_ADDRESS: required: set it to a 0x-prefixed 20-byte hex address',
        'L2_RPC_URL: required: set it to an absolute http or https URL',
        'L2_SIGNER_TYPE: required: set it to one of private-key, remote-signer, kms',
        'DB_CLEANER_ENABLED: required: set it to a boolean (true or false)',
      ],
    },
    {
      name: 'booleans accept only true or false',
      env: { ...base, L1_L2_AUTO_CLAIM_ENABLED: 'yes', L2_L1_EOA_ENABLED: '1' },
      expected: [
        'L1_L2_AUTO_CLAIM_ENABLED: expected a boolean (true or false), got "yes"',
        'L2_L1_EOA_ENABLED: expected a boolean (true or false), got "1"',
      ],
    },
    {
      name: 'an unknown signer type is an error, never a fallback',
      env: { ...base, L2_SIGNER_TYPE: 'web3signer' },
      expected: ['L2_SIGNER_TYPE: expected one of private-key, remote-signer, kms, got "web3signer"'],
    },
    {
      name: 'kms needs its key id',
      env: { ...base, L1_SIGNER_TYPE: 'kms' },
      expected: ['L1_KMS_KEY_ID: required when L1_SIGNER_TYPE is kms: set it to the key ID or resource name'],
    },
    {
      name: 'private-key needs the key (when its direction is enabled); a bad key is not echoed',
      env: { ...base, L2_SIGNER_PRIVATE_KEY: undefined, L1_SIGNER_PRIVATE_KEY: '0xnothex' },
      expected: [
        'L1_SIGNER_PRIVATE_KEY: expected 0x followed by 64 hex digits (32 bytes), got "[redacted]"',
        'L2_SIGNER_PRIVATE_KEY: required when L2_SIGNER_TYPE is private-key: set it to 0x followed by 64 hex digits (32 bytes)',
      ],
    },
    {
      name: 'remote signer: endpoint and public key; the TLS object needs all four settings',
      env: { ...base, L1_SIGNER_TYPE: 'remote-signer', L1_REMOTE_SIGNER_TLS_KEYSTORE_PATH: '/ks.p12' },
      expected: [
        'L1_REMOTE_SIGNER_ENDPOINT: required when L1_SIGNER_TYPE is remote-signer: set it to an absolute http or https URL',
        'L1_REMOTE_SIGNER_PUBLIC_KEY: required when L1_SIGNER_TYPE is remote-signer: set it to a 0x-prefixed hex public key',
        'L1_REMOTE_SIGNER_TLS_KEYSTORE_PASSWORD: required when L1_REMOTE_SIGNER_TLS_KEYSTORE_PATH is set: set it to a non-empty string',
        'L1_REMOTE_SIGNER_TLS_TRUSTSTORE_PATH: required when L1_REMOTE_SIGNER_TLS_KEYSTORE_PATH is set: set it to a non-empty string',
        'L1_REMOTE_SIGNER_TLS_TRUSTSTORE_PASSWORD: required when L1_REMOTE_SIGNER_TLS_KEYSTORE_PATH is set: set it to a non-empty string',
      ],
    },
    {
      name: 'the calldata filter needs both of its variables',
      env: {
        ...base,
        L1_EVENT_FILTER_CALLDATA: 'calldata.amount > 0',
        L2_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE: 'function f(uint256 a)',
      },
      expected: [
        'L1_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE: required when L1_EVENT_FILTER_CALLDATA is set (the calldata filter needs both)',
        'L2_EVENT_FILTER_CALLDATA: required when L2_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE is set (the calldata filter needs both)',
      ],
    },
    {
      name: 'a calldata filter that does not parse, and a function interface that is not one',
      env: {
        ...base,
        L1_EVENT_FILTER_CALLDATA: 'calldata.amount >>> 2',
        L1_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE: 'not a function',
      },
      expected: [
        'L1_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE: expected a function signature with named typed arguments, e.g. "transfer(address to, uint256 amount)", got "not a function"',
        "L1_EVENT_FILTER_CALLDATA: expected a filter expression over calldata.* (e.g. calldata.funcSignature == \"0x26dfbc20\" and calldata.amount > 0): Parse error on line 1: calldata.amount >>> 2 -----------------^ Expecting '-', 'not', 'if', '(', 'Number', 'Symbol', 'String', got '>'",
      ],
    },
    {
      name: 'addresses, URLs and numbers have their forms',
      env: {
        ...base,
        L2_CONTRACT_ADDRESS: '0x1234',
        L1_RPC_URL: 'ws://node:8546',
        L1_EVENT_FILTER_FROM_ADDRESS: 'alice',
        MAX_CLAIM_GAS_LIMIT: '0',
        MAX_FEE_PER_GAS_CAP: '1e9',
        L1_MAX_BLOCKS_TO_FETCH_LOGS: '0',
        L2_LISTENER_INTERVAL: '-5',
      },
      expected: [
        'L1_RPC_URL: expected an absolute http or https URL, got "ws://node:8546"',
        'L1_EVENT_FILTER_FROM_ADDRESS: expected a 0x-prefixed 20-byte hex address, got "alice"',
        'L1_MAX_BLOCKS_TO_FETCH_LOGS: expected an integer >= 1, got "0"',
        'L2_CONTRACT_ADDRESS: expected a 0x-prefixed 20-byte hex address, got "0x1234"',
        'L2_LISTENER_INTERVAL: expected an integer >= 1, got "-5"',
        'MAX_CLAIM_GAS_LIMIT: expected an integer >= 1 (decimal digits), got "0"',
        'MAX_FEE_PER_GAS_CAP: expected an integer >= 1 (decimal digits), got "1e9"',
      ],
    },
    {
      name: 'API_PORT is 1..65535; GAS_ESTIMATION_PERCENTILE 0..100; PROFIT_MARGIN non-negative',
      env: { ...base, API_PORT: '70000', GAS_ESTIMATION_PERCENTILE: '101', PROFIT_MARGIN: '-1' },
      expected: [
        'GAS_ESTIMATION_PERCENTILE: expected a decimal number from 0 to 100, got "101"',
        'PROFIT_MARGIN: expected a decimal number >= 0, got "-1"',
        'API_PORT: expected an integer from 1 to 65535, got "70000"',
      ],
    },
    {
      name: 'database and cleaner variables',
      env: {
        ...base,
        DATABASE_PORT: 'abc',
        DATABASE_SSL: 'maybe',
        DB_CLEANER_ENABLED: 'on',
        DB_DAYS_BEFORE_NOW_TO_DELETE: '0',
      },
      expected: [
        'DATABASE_PORT: expected an integer from 1 to 65535, got "abc"',
        'DATABASE_SSL: expected a boolean (true or false), got "maybe"',
        'DB_CLEANER_ENABLED: expected a boolean (true or false), got "on"',
        'DB_DAYS_BEFORE_NOW_TO_DELETE: expected an integer >= 1, got "0"',
      ],
    },
    {
      name: 'a claim-via address that is not a 20-byte hex address is refused, naming the variable',
      env: { ...base, L1_CLAIM_VIA_ADDRESS: '0x1234', L2_CLAIM_VIA_ADDRESS: 'forwarder.eth' },
      expected: [
        'L1_CLAIM_VIA_ADDRESS: expected a 0x-prefixed 20-byte hex address, got "0x1234"',
        'L2_CLAIM_VIA_ADDRESS: expected a 0x-prefixed 20-byte hex address, got "forwarder.eth"',
      ],
    },
  ];

  for (const row of table) {
    it(`error: ${row.name}`, () => {
      expect(problems(row.env)).toEqual(row.expected);
    });
  }
});
