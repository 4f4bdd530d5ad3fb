import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import {
  call,
  chain,
  countingUpstream,
  deployOuter,
  result,
  startTestRpc,
  wallet,
  type CountingUpstream,
} from './helpers.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { mined } from '../../src/common/chain/mined.js';

// Issue 24's standard methods, each compared with the same call made to anvil directly.
let anvil: Anvil;
let node: CountingUpstream;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let bare: Awaited<ReturnType<typeof startTestRpc>>;
let outer: string;
let block: { number: string; hash: string; tx: string };

const from = wallet(0).address.toLowerCase();
const to = wallet(1).address.toLowerCase();
/** JUMPDEST PUSH1 0 JUMP: a loop that runs until its gas is gone. */
const LOOP = '0x5b600056';

beforeAll(async () => {
  const started = await chain();
  anvil = started.anvil;
  const contract = await deployOuter(wallet(0, started.provider));
  outer = (await contract.getAddress()).toLowerCase();
  const receipt = (await mined(contract.getFunction('go')({ value: 5n })))!;
  block = { number: ethers.toQuantity(receipt.blockNumber), hash: receipt.blockHash, tx: receipt.hash };
  node = await countingUpstream(anvil.url);
  db = await openTestDb();
  rpc = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc'),
    upstreams: [node.url],
    env: { RPC_SIMULATE_MAX_BLOCKS: '3', RPC_SIMULATE_MAX_CALLS: '4', RPC_GAS_CAP: '1000000' },
  });
  // A node that does not serve net_listening either (anvil 1.7 already lacks net_peerCount).
  node.refuse.add('net_listening');
  bare = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc'),
    upstreams: [node.url],
    env: { RPC_GAS_CAP: '2000000000', RPC_EVM_TIMEOUT_MS: '50' },
  });
});

afterAll(async () => {
  await rpc?.stop();
  await bare?.stop();
  await node?.close();
  await anvil?.stop();
  await db?.close();
});

const asked = (method: string) => node.counts.get(method) ?? 0;

describe('standard methods answered as the node answers them', () => {
  it('behavior: eth_blobBaseFee, the uncle methods and web3_sha3 equal anvil', async () => {
    const same: [string, unknown[]][] = [
      ['eth_blobBaseFee', []],
      ['eth_getUncleCountByBlockNumber', [block.number]],
      ['eth_getUncleCountByBlockHash', [block.hash]],
      ['eth_getUncleByBlockNumberAndIndex', [block.number, '0x0']],
      ['eth_getUncleByBlockHashAndIndex', [block.hash, '0x0']],
      ['web3_sha3', ['0x68656c6c6f']],
      ['web3_sha3', ['0x']],
    ];
    for (const [method, params] of same)
      expect([method, await call(rpc.url, method, params)].toString()).toBe(
        [method, await call(anvil.url, method, params)].toString(),
      );
    expect((await call(rpc.url, 'eth_getUncleCountByBlockNumber', [block.number])).result).toBe('0x0');
    expect((await call(rpc.url, 'eth_getUncleByBlockHashAndIndex', [block.hash, '0x0'])).result).toBeNull();
    // An unknown block: the node's own error, passed on.
    const unknown = await call(rpc.url, 'eth_getUncleCountByBlockHash', [ethers.id('no block')]);
    expect(unknown.error).toEqual(
      (await call(anvil.url, 'eth_getUncleCountByBlockHash', [ethers.id('no block')])).error,
    );
  });

  it('behavior: web3_sha3 is computed by the endpoint (no node call) and is keccak-256', async () => {
    const before = asked('web3_sha3');
    expect(await result(rpc.url, 'web3_sha3', ['0x68656c6c6f'])).toBe(ethers.keccak256('0x68656c6c6f'));
    expect(asked('web3_sha3')).toBe(before);
  });

  it('behavior: net_listening and net_peerCount answer when the node lacks them, and the node is asked once', async () => {
    expect(await call(anvil.url, 'net_peerCount')).toMatchObject({ error: { code: -32601 } });
    expect(await result(rpc.url, 'net_listening')).toBe(true);
    expect(await result(rpc.url, 'net_peerCount')).toBe('0x0');
    expect(await result(bare.url, 'net_listening')).toBe(true);
    const listening = asked('net_listening');
    const peers = asked('net_peerCount');
    expect(listening).toBeGreaterThanOrEqual(1);
    expect(await result(rpc.url, 'net_listening')).toBe(true);
    expect(await result(rpc.url, 'net_peerCount')).toBe('0x0');
    expect([asked('net_listening'), asked('net_peerCount')]).toEqual([listening, peers]);
  });

  it('behavior: debug_traceBlockByHash equals anvil and debug_traceBlockByNumber of the same block; the tracer rule holds', async () => {
    const options = { tracer: 'callTracer' };
    const ours = await result(rpc.url, 'debug_traceBlockByHash', [block.hash, options]);
    expect(ours).toEqual(await result(anvil.url, 'debug_traceBlockByHash', [block.hash, options]));
    expect(ours).toEqual(await result(rpc.url, 'debug_traceBlockByNumber', [block.number, options]));
    expect(ours[0].txHash).toBe(block.tx);
    const before = asked('debug_traceBlockByHash');
    for (const bad of [{}, { tracer: 'flatCallTracer' }, { tracer: '{ result: function() {} }' }]) {
      expect((await call(rpc.url, 'debug_traceBlockByHash', [block.hash, bad])).error?.code).toBe(-32602);
    }
    expect(asked('debug_traceBlockByHash')).toBe(before);
  });
});

describe('eth_createAccessList', () => {
  it('behavior: equals anvil for a call that reads and writes storage', async () => {
    const tx = { from, to: outer, data: '0x' + ethers.id('go()').slice(2, 10), value: '0x1', gas: '0xf4240' };
    // anvil lists the accounts in no fixed order (a hash map): compared by address.
    const sorted = (r: { accessList: { address: string }[] }) => ({
      ...r,
      accessList: [...r.accessList].sort((x, y) => x.address.localeCompare(y.address)),
    });
    const ours = sorted(await result(rpc.url, 'eth_createAccessList', [tx, 'latest']));
    expect(ours).toEqual(sorted(await result(anvil.url, 'eth_createAccessList', [tx, 'latest'])));
    expect(ours.accessList.length).toBe(2);
    // Block left out: latest, as the spec says.
    expect(sorted(await result(rpc.url, 'eth_createAccessList', [tx]))).toEqual(ours);
  });

  it('error: gas above RPC_GAS_CAP is refused naming the cap, before the node', async () => {
    const before = asked('eth_createAccessList');
    const r = await call(rpc.url, 'eth_createAccessList', [{ from, to, gas: '0xf4241' }]);
    expect(r.error?.code).toBe(-32602);
    expect(r.error?.message).toContain('RPC_GAS_CAP');
    expect(asked('eth_createAccessList')).toBe(before);
  });
});

const transfer = (gas?: string) => ({ from, to, value: '0x1', ...(gas ? { gas } : {}) });

describe('eth_simulateV1', () => {
  it('behavior: calls and their results equal anvil', async () => {
    const payload = {
      blockStateCalls: [
        {
          calls: [transfer('0x5208'), { from, to: outer, data: '0x' + ethers.id('go()').slice(2, 10), gas: '0x30d40' }],
        },
        { calls: [transfer('0x5208')] },
      ],
    };
    const ours = await result(rpc.url, 'eth_simulateV1', [payload, block.number]);
    const direct = await result(anvil.url, 'eth_simulateV1', [payload, block.number]);
    expect(ours.map((b: { calls: unknown }) => b.calls)).toEqual(direct.map((b: { calls: unknown }) => b.calls));
    expect(ours.map((b: { number: string }) => b.number)).toEqual(direct.map((b: { number: string }) => b.number));
    expect(ours[0].calls.map((c: { status: string }) => c.status)).toEqual(['0x1', '0x1']);
  });

  it('error: more blocks or calls than allowed, or more gas than RPC_GAS_CAP in all, is -32005 naming the variable, before the node', async () => {
    const before = asked('eth_simulateV1');
    const cases: [unknown, string][] = [
      [{ blockStateCalls: [{}, {}, {}, {}] }, 'RPC_SIMULATE_MAX_BLOCKS'],
      [
        { blockStateCalls: [{ calls: [transfer(), transfer()] }, { calls: [transfer(), transfer(), transfer()] }] },
        'RPC_SIMULATE_MAX_CALLS',
      ],
      [{ blockStateCalls: [{ calls: [transfer('0x7a120'), transfer('0x7a121')] }] }, 'RPC_GAS_CAP'],
      // 1,000,000 - 990,000 = 10,000 left for the call without gas: less than a transfer needs.
      [{ blockStateCalls: [{ calls: [transfer('0xf1b30'), transfer()] }] }, 'RPC_GAS_CAP'],
    ];
    for (const [payload, variable] of cases) {
      const r = await call(rpc.url, 'eth_simulateV1', [payload]);
      expect(r.error?.code, variable).toBe(-32005);
      expect(r.error?.message).toContain(variable);
      expect(r.error?.data).toMatchObject({ cap: variable });
    }
    // One call above the cap: as eth_call, -32602 naming the cap.
    const one = await call(rpc.url, 'eth_simulateV1', [{ blockStateCalls: [{ calls: [transfer('0xf4241')] }] }]);
    expect([one.error?.code, one.error?.message.includes('RPC_GAS_CAP')]).toEqual([-32602, true]);
    expect(asked('eth_simulateV1')).toBe(before);
  });

  it('behavior: a call without gas gets what RPC_GAS_CAP has left after the gas the earlier calls used', async () => {
    // 1,000,000 - 21,000 used by the first: the second gets 979,000 (simulate-gas.test.ts has the rest).
    const blocks = await result(rpc.url, 'eth_simulateV1', [
      { blockStateCalls: [{ calls: [transfer('0xecd30'), transfer()] }], returnFullTransactions: true },
    ]);
    expect(blocks[0].calls.map((c: { status: string }) => c.status)).toEqual(['0x1', '0x1']);
    expect(blocks[0].transactions.map((t: { gas: string }) => t.gas)).toEqual(['0xecd30', '0xef038']);
  });

  it('error: a simulation past RPC_EVM_TIMEOUT_MS is -32005 naming it', async () => {
    const loop = '0x' + '42'.repeat(20);
    const payload = {
      blockStateCalls: [
        {
          blockOverrides: { gasLimit: '0x77359400' },
          stateOverrides: { [loop]: { code: LOOP } },
          calls: [{ from, to: loop }],
        },
      ],
    };
    const r = await call(bare.url, 'eth_simulateV1', [payload]);
    expect(r.error?.code).toBe(-32005);
    expect(r.error?.message).toContain('RPC_EVM_TIMEOUT_MS');
  });
});
