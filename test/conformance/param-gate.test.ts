import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { call, chain, startTestRpc } from '../rpc/helpers.js';
import { countingNode, type CountingNode } from './counting-node.js';
import type { Anvil } from '../../src/devnet/anvil.js';

let anvil: Anvil;
let node: CountingNode;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;

beforeAll(async () => {
  ({ anvil } = await chain());
  node = await countingNode(anvil.url);
  db = await openTestDb();
  // Head tracking off (one poll at start), so every node call during a case comes from that case.
  rpc = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc'),
    upstreams: [node.url],
    env: { RPC_UPSTREAM_HEAD_POLL_MS: '3600000' },
  });
});

afterAll(async () => {
  await rpc?.stop();
  await node?.close();
  await anvil?.stop();
  await db?.close();
});

const TO = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
const A = '0x8ba1f109551bd432803012645ac136ddd64dba72';
const word = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

/** Inputs anvil refused (the issue's fuzzer findings and their kin), each with where our refusal must point. */
const refused: [string, string, unknown[], RegExp][] = [
  [
    'authorization entry without its members',
    'eth_call',
    [{ to: TO, authorizationList: [{}] }],
    /param 0 \(transaction\) at transaction\.authorizationList\[0\]: missing required member/,
  ],
  [
    'transaction type of two bytes',
    'eth_call',
    [{ to: TO, type: '0x100' }],
    /param 0 \(transaction\) at transaction\.type: "0x100" is not TransactionType/,
  ],
  [
    '65-digit quantity',
    'eth_call',
    [{ to: TO, value: `0x1${'0'.repeat(64)}` }],
    /at transaction\.value: .* is not Quantity/,
  ],
  [
    'gas past 64 bits',
    'eth_estimateGas',
    [{ to: TO, gas: '0x10000000000000000' }],
    /at transaction\.gas: .* is not Uint64/,
  ],
  [
    'fee per gas past 128 bits',
    'eth_call',
    [{ to: TO, maxFeePerGas: `0x1${'0'.repeat(32)}` }],
    /at transaction\.maxFeePerGas: .* is not Uint128/,
  ],
  [
    'data and input differ',
    'eth_call',
    [{ to: TO, data: '0x01', input: '0x02' }, 'latest'],
    /param 0 \(transaction\) at transaction\.input: data and input are both set and differ/,
  ],
  [
    'gasPrice with EIP-1559 fees',
    'eth_call',
    [{ to: TO, gasPrice: '0x1', maxFeePerGas: '0x2' }],
    /at transaction\.gasPrice: gasPrice is set together with maxFeePerGas/,
  ],
  [
    'priority fee above the maximum fee',
    'debug_traceCall',
    [{ to: TO, maxFeePerGas: '0x1', maxPriorityFeePerGas: '0x2' }, 'latest', { tracer: 'callTracer' }],
    /at transaction\.maxPriorityFeePerGas: 0x2 is above maxFeePerGas 0x1/,
  ],
  [
    'priority fee without a maximum fee',
    'eth_call',
    [{ to: TO, maxPriorityFeePerGas: '0x1' }],
    /at transaction\.maxPriorityFeePerGas: a priority fee needs maxFeePerGas/,
  ],
  [
    'state-override key that is not an address',
    'eth_call',
    [{ to: TO }, 'latest', { '0x01': {} }],
    /param 2 \(stateOverride\).*0x01/,
  ],
  [
    'override slot that is not 32 bytes',
    'eth_call',
    [{ to: TO }, 'latest', { [A]: { stateDiff: { '0x1': word(1) } } }],
    /param 2 \(stateOverride\).*0x1/,
  ],
  [
    'state and stateDiff together',
    'eth_call',
    [{ to: TO }, 'latest', { [A]: { state: {}, stateDiff: {} } }],
    /param 2 \(stateOverride\) at stateOverride\.0x8ba1.*: state and stateDiff are both set/,
  ],
  // The gas cap (RPC_GAS_CAP, 50,000,000 here) is ours: refused before any node read, also by the methods
  // that read the nonce, the head and the chain id alongside the estimate (svc_estimateGas).
  [
    'gas above the cap, svc_estimateGas with a sender',
    'svc_estimateGas',
    [{ from: A, to: null, gas: '0xd142a561c1604' }, '0x0'],
    /param 0 \(transaction\): gas 3681346763101700 is above this endpoint's gas cap/,
  ],
  [
    'gas above the cap, eth_estimateGas',
    'eth_estimateGas',
    [{ from: A, to: TO, gas: '0x2faf081' }],
    /gas 50000001 is above this endpoint's gas cap of 50000000 \(RPC_GAS_CAP\)/,
  ],
  [
    'gas above the cap, eth_call',
    'eth_call',
    [{ to: TO, gas: '0xffffffffffffffff' }, 'latest'],
    /gas cap of 50000000 \(RPC_GAS_CAP\)/,
  ],
  [
    'gas above the cap, debug_traceCall',
    'debug_traceCall',
    [{ to: TO, gas: '0x2faf081' }, 'latest', { tracer: 'callTracer' }],
    /gas cap of 50000000/,
  ],
  [
    'gas above the cap, vendor_simulateAssetChanges',
    'vendor_simulateAssetChanges',
    [{ from: A, to: TO, gas: '0x2faf081' }],
    /gas cap of 50000000/,
  ],
  [
    'fee history of 2^64 blocks (anvil panics on it)',
    'eth_feeHistory',
    ['0x10000000000000000', 'latest', []],
    /param 0 \(blockCount\)/,
  ],
  [
    'percentiles out of order',
    'eth_feeHistory',
    ['0x1', 'latest', [50, 10]],
    /param 2 \(rewardPercentiles\) at rewardPercentiles\.1: 10 is below 50/,
  ],
  [
    'bytes that are not a signed transaction',
    'eth_sendRawTransaction',
    ['0x01'],
    /param 0 \(signedTransaction\): not a signed transaction/,
  ],
  [
    'transaction index past 64 bits',
    'eth_getTransactionByBlockNumberAndIndex',
    ['latest', '0x10000000000000000'],
    /param 1 \(transactionIndex\)/,
  ],
  ['block number past 64 bits', 'eth_getBlockByNumber', ['0x10000000000000000', false], /param 0 \(block\)/],
];

describe('the spec as the gate', () => {
  for (const [what, method, params, message] of refused) {
    it(`error: ${what} is -32602 naming the param, and no node sees it`, async () => {
      const before = node.calls();
      const reply = await call(rpc.url, method, params);
      expect(reply.error?.code, JSON.stringify(reply)).toBe(-32602);
      expect(reply.error?.message).toMatch(message);
      expect(node.calls() - before).toBe(0);
    });
  }

  it('behavior: what the execution-apis allow reaches the node and is answered (getProof block optional with short keys, receipts by hash, equal data and input, blob members)', async () => {
    const refusalsBefore = node.refusals.length;
    const proof = await call(rpc.url, 'eth_getProof', [A, ['0x1', '0x']]);
    expect(proof.error).toBeUndefined();
    expect(proof.result.storageProof.map((s: { key: string }) => BigInt(s.key))).toEqual([1n, 0n]);
    const genesis = await call(rpc.url, 'eth_getBlockByNumber', ['0x0', false]);
    const receipts = await call(rpc.url, 'eth_getBlockReceipts', [genesis.result.hash]);
    expect(receipts.result).toEqual([]);
    const same = await call(rpc.url, 'eth_call', [{ to: TO, data: '0xAB', input: '0xab' }, 'latest']);
    expect(same.result).toBe('0x');
    const blob = `0x${'00'.repeat(131072)}`;
    const withBlobs = await call(rpc.url, 'eth_call', [
      { to: TO, blobs: [blob], commitments: [`0x${'c0'.padEnd(96, '0')}`], proofs: [`0x${'c0'.padEnd(96, '0')}`] },
      'latest',
    ]);
    expect(withBlobs.error?.code).not.toBe(-32602);
    expect(node.refusals.slice(refusalsBefore)).toEqual([]);
  });
});
