import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/common/config/env.js';
import { loadStateConfig } from '../../src/state/config.js';

const base = {
  STATE_L2_RPC_URL: 'http://127.0.0.1:8546',
  STATE_L1_RPC_URL: 'http://127.0.0.1:8545',
  STATE_L1_MESSAGE_SERVICE: '0x00000000000000000000000000000000000000AA',
};

describe('state manager configuration', () => {
  it('behavior: defaults keep the last 128 finalized blocks and poll every second', () => {
    expect(
      loadStateConfig({
        ...base,
        STATE_GENESIS_ACCOUNTS:
          '0x00000000000000000000000000000000000000Bb, 0x00000000000000000000000000000000000000cc',
      }),
    ).toEqual({
      l2RpcUrl: base.STATE_L2_RPC_URL,
      l1RpcUrl: base.STATE_L1_RPC_URL,
      l1MessageService: '0x00000000000000000000000000000000000000aa',
      retainedFinalizedBlocks: 128,
      pollIntervalMs: 1000,
      l1FromBlock: 0,
      l1LogRange: 10_000,
      maxBlocksPerStep: 100,
      blocksPerTransaction: 100,
      traceMethod: 'debug_traceBlockByHash',
      hash: 'poseidon2',
      genesisAccounts: ['0x00000000000000000000000000000000000000bb', '0x00000000000000000000000000000000000000cc'],
    });
  });

  it('error: every problem is reported at once, by variable name', () => {
    let err: unknown;
    try {
      loadStateConfig({
        STATE_L1_RPC_URL: 'ftp://x',
        STATE_RETAINED_FINALIZED_BLOCKS: '0',
        STATE_GENESIS_ACCOUNTS: '0x12',
        STATE_BLOCKS_PER_TRANSACTION: '0',
        STATE_L2_TRACE_METHOD: 'trace_block',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems.join('\n');
    for (const name of [
      'STATE_L2_RPC_URL: required',
      'STATE_L1_RPC_URL: expected',
      'STATE_L1_MESSAGE_SERVICE: required',
      'STATE_RETAINED_FINALIZED_BLOCKS: expected an integer >= 1',
      'STATE_BLOCKS_PER_TRANSACTION: expected an integer',
      'STATE_GENESIS_ACCOUNTS: expected a comma-separated list',
      'STATE_L2_TRACE_METHOD: expected one of debug_traceBlockByHash, trace_replayBlockTransactions',
    ]) {
      expect(problems).toContain(name);
    }
    expect(problems).toContain('"0x12" is not an address');
  });
});
