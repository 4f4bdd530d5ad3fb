import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { call, chain, deployOuter, result, resultValidator, startTestRpc, wallet } from './helpers.js';
import { fakeBundler, fakeProofBackend } from './fakes.js';
import { loadRpcSpec } from '../../src/rpc/spec.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { mined } from '../../src/common/chain/mined.js';

let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let converted: Awaited<ReturnType<typeof startTestRpc>>;
let bundler: Awaited<ReturnType<typeof fakeBundler>>;
let validate: Awaited<ReturnType<typeof resultValidator>>;
const proofs = fakeProofBackend();
let outer: ethers.Contract;
const txs: Record<string, ethers.TransactionReceipt> = {};
const sender = wallet(0).address;
const ZERO_HASH = `0x${'00'.repeat(32)}`;

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  const signer = wallet(0, provider);
  outer = await deployOuter(signer);
  txs.deploy = (await mined(outer.deploymentTransaction()!))!;
  const send = async (name: string, p: Promise<ethers.TransactionResponse>) => {
    txs[name] = (await mined(p))!;
  };
  await send('go', outer.getFunction('go')({ value: 5n }));
  await send('note', outer.getFunction('note')(1n, ethers.id('tag'), 3n));
  await send('spawn', outer.getFunction('spawn')());
  await send('delegate', outer.getFunction('delegate')());
  await send('transfer', signer.sendTransaction({ to: wallet(1).address, value: 1234n }));
  // A transaction that reverts at the top level, mined anyway (explicit gas limit, no estimate).
  const failing = await signer.sendTransaction({
    to: await outer.getAddress(),
    data: outer.interface.encodeFunctionData('bad'),
    gasLimit: 100_000n,
  });
  txs.failing = (await provider.waitForTransaction(failing.hash, 1, 60_000))!;

  bundler = await fakeBundler('pimlico_');
  db = await openTestDb();
  const schema = db.schema('rpc');
  rpc = await startTestRpc({
    db: db.client,
    schema,
    upstreams: [anvil.url],
    proofBackend: proofs,
    env: { RPC_BUNDLER_URL: bundler.url, RPC_BUNDLER_VENDOR_PREFIX: 'pimlico_' },
  });
  converted = await startTestRpc({
    db: db.client,
    schema,
    upstreams: [anvil.url],
    env: { RPC_TRACE_TRANSACTION_SOURCE: 'callTracer' },
  });
  validate = await resultValidator();
});

afterAll(async () => {
  await rpc?.stop();
  await converted?.stop();
  await bundler?.close();
  await anvil?.stop();
  await db?.close();
});

const hex = (n: bigint | number) => `0x${n.toString(16)}`;

describe('every method of the spec over HTTP', () => {
  it('behavior: each method answers with a result that matches its result schema', async () => {
    const to = await outer.getAddress();
    const go = txs.go!;
    const block = hex(go.blockNumber);
    const callObj = { from: sender, to, data: outer.interface.encodeFunctionData('go'), value: '0x3' };
    const signed = await wallet(2, provider).signTransaction(
      await wallet(2, provider).populateTransaction({ to: sender, value: 1n }),
    );
    const filterId = await result(rpc.url, 'eth_newFilter', [{ address: to }]);
    const blockFilterId = await result(rpc.url, 'eth_newBlockFilter', []);
    const userOp = {
      sender,
      nonce: '0x0',
      callData: '0x',
      callGasLimit: '0x186a0',
      verificationGasLimit: '0x186a0',
      preVerificationGas: '0xc350',
      maxFeePerGas: '0x3b9aca00',
      maxPriorityFeePerGas: '0x3b9aca00',
      signature: '0x',
    };
    const plan: Record<string, unknown[]> = {
      eth_chainId: [],
      eth_blockNumber: [],
      eth_getBalance: [sender, 'latest'],
      eth_getCode: [to],
      eth_getStorageAt: [to, '0x0', 'latest'],
      eth_getTransactionCount: [sender, { blockNumber: block }],
      eth_call: [callObj, 'latest'],
      eth_estimateGas: [callObj],
      eth_gasPrice: [],
      eth_maxPriorityFeePerGas: [],
      eth_feeHistory: ['0x3', 'latest', [25, 75]],
      eth_getBlockByNumber: [block, true],
      eth_getBlockByHash: [go.blockHash, false],
      eth_getBlockTransactionCountByNumber: [block],
      eth_getBlockTransactionCountByHash: [go.blockHash],
      eth_getTransactionByHash: [go.hash],
      eth_getTransactionByBlockNumberAndIndex: [block, '0x0'],
      eth_getTransactionByBlockHashAndIndex: [go.blockHash, '0x0'],
      eth_getTransactionReceipt: [go.hash],
      eth_getBlockReceipts: [block],
      eth_getLogs: [{ fromBlock: 'earliest', toBlock: 'latest', address: to }],
      eth_newFilter: [{ address: [to], topics: [null] }],
      eth_newBlockFilter: [],
      eth_getFilterChanges: [filterId],
      eth_getFilterLogs: [filterId],
      eth_uninstallFilter: [blockFilterId],
      eth_sendRawTransaction: [signed],
      // The same transaction again: the node already has it, so the re-send answers its receipt (idempotent).
      eth_sendRawTransactionSync: [signed, 5000],
      eth_getProof: [to, [ZERO_HASH], 'latest'],
      eth_syncing: [],
      net_version: [],
      web3_clientVersion: [],
      debug_traceTransaction: [go.hash, { tracer: 'callTracer', tracerConfig: { withLog: true } }],
      debug_traceCall: [callObj, 'latest', { tracer: 'prestateTracer', tracerConfig: { diffMode: true } }],
      debug_traceBlockByNumber: [block, { tracer: 'callTracer' }],
      eth_createAccessList: [callObj, 'latest'],
      eth_simulateV1: [{ blockStateCalls: [{ calls: [callObj] }] }, 'latest'],
      eth_blobBaseFee: [],
      eth_baseFee: [],
      eth_fillTransaction: [callObj],
      eth_newPendingTransactionFilter: [],
      debug_traceBlockByHash: [go.blockHash, { tracer: 'prestateTracer' }],
      eth_getUncleCountByBlockNumber: [block],
      eth_getUncleCountByBlockHash: [go.blockHash],
      eth_getUncleByBlockNumberAndIndex: [block, '0x0'],
      eth_getUncleByBlockHashAndIndex: [go.blockHash, '0x0'],
      web3_sha3: ['0x1234'],
      net_listening: [],
      net_peerCount: [],
      trace_transaction: [go.hash],
      svc_getProof: [to, [ZERO_HASH], 'finalized'],
      svc_estimateGas: [callObj],
      eth_sendUserOperation: [userOp, '0x0000000071727De22E5E9d8BAf0edAc6f37da032'],
      eth_estimateUserOperationGas: [userOp, '0x0000000071727De22E5E9d8BAf0edAc6f37da032'],
      eth_supportedEntryPoints: [],
      eth_getUserOperationByHash: [ZERO_HASH],
      eth_getUserOperationReceipt: [ZERO_HASH],
      vendor_getUserOperationGasPrice: [],
      vendor_getUserOperationStatus: [ZERO_HASH],
      vendor_simulateAssetChanges: [callObj],
    };
    // Subscriptions need a socket: over HTTP they answer -32601 saying so (test/rpc/ws.test.ts covers them).
    const socketOnly = ['eth_subscribe', 'eth_unsubscribe'];
    const spec = await loadRpcSpec();
    expect([...Object.keys(plan), ...socketOnly].sort()).toEqual(spec.dereferenced.methods.map((m) => m.name).sort());
    for (const method of socketOnly) {
      const r = await call(rpc.url, method, method === 'eth_subscribe' ? ['newHeads'] : ['0x' + '0'.repeat(32)]);
      expect(r.error, method).toMatchObject({ code: -32601, message: expect.stringContaining('WebSocket') });
    }
    for (const [method, params] of Object.entries(plan)) {
      const r = await call(rpc.url, method, params);
      expect(r.error, `${method}: ${JSON.stringify(r.error)}`).toBeUndefined();
      expect(validate(method, r.result), `${method} result ${JSON.stringify(r.result).slice(0, 300)}`).toBeUndefined();
    }
  });
});

describe('chain rules', () => {
  it('behavior: trace_transaction from the upstream equals the conversion from callTracer on the same transactions', async () => {
    for (const [name, receipt] of Object.entries(txs)) {
      const fromUpstream = await result(rpc.url, 'trace_transaction', [receipt.hash]);
      const fromCallTracer = await result(converted.url, 'trace_transaction', [receipt.hash]);
      expect(fromCallTracer, name).toEqual(fromUpstream);
      expect(validate('trace_transaction', fromCallTracer), name).toBeUndefined();
    }
    const traces = await result(converted.url, 'trace_transaction', [txs.go!.hash]);
    expect(traces.map((t: { traceAddress: number[] }) => t.traceAddress)).toEqual([[], [0], [1]]);
    expect(traces[0]).toMatchObject({
      blockNumber: txs.go!.blockNumber,
      transactionPosition: 0,
      subtraces: 2,
      type: 'call',
    });
    expect(traces[2].error).toBe('Reverted');
  });

  it('behavior: trace_transaction is null for an unknown transaction (both paths)', async () => {
    expect(await result(rpc.url, 'trace_transaction', [ZERO_HASH])).toBeNull();
    expect(await result(converted.url, 'trace_transaction', [ZERO_HASH])).toBeNull();
  });

  it('behavior: debug_traceBlockByNumber entries are {txHash, result} in block order', async () => {
    const entries = await result(rpc.url, 'debug_traceBlockByNumber', [
      hex(txs.note!.blockNumber),
      { tracer: 'callTracer' },
    ]);
    expect(entries).toHaveLength(1);
    expect(entries[0].txHash).toBe(txs.note!.hash);
    expect(entries[0].result.type).toBe('CALL');
  });

  it('behavior: eth_getTransactionByBlockNumberAndIndex is null past the last index and for unknown blocks', async () => {
    const block = hex(txs.go!.blockNumber);
    expect((await result(rpc.url, 'eth_getTransactionByBlockNumberAndIndex', [block, '0x0'])).hash).toBe(txs.go!.hash);
    expect(await result(rpc.url, 'eth_getTransactionByBlockNumberAndIndex', [block, '0x1'])).toBeNull();
    expect(await result(rpc.url, 'eth_getTransactionByBlockNumberAndIndex', ['0xffffff', '0x0'])).toBeNull();
  });

  it('behavior: eth_getBlockReceipts lists the block receipts in order; null for an unknown block', async () => {
    const receipts = await result(rpc.url, 'eth_getBlockReceipts', [hex(txs.go!.blockNumber)]);
    expect(receipts.map((r: { transactionHash: string }) => r.transactionHash)).toEqual([txs.go!.hash]);
    expect(await result(rpc.url, 'eth_getBlockReceipts', ['0xffffff'])).toBeNull();
  });

  it('error: a reverting eth_call is error 3 with the revert data', async () => {
    const r = await call(rpc.url, 'eth_call', [
      { to: await outer.getAddress(), data: outer.interface.encodeFunctionData('bad') },
    ]);
    expect(r.error!.code).toBe(3);
    expect(
      outer.interface.parseError(r.error!.data as string)?.args[0] ??
        ethers.AbiCoder.defaultAbiCoder().decode(['string'], `0x${(r.error!.data as string).slice(10)}`)[0],
    ).toBe('outer failed');
  });
});

describe('svc_estimateGas', () => {
  it('behavior: gas limit from the upstream estimate, base fee of the latest block, priority fee from the compressed size', async () => {
    const { compressedSize, signedSizeTransaction, priorityFee } = await import('../../src/rpc/estimate-gas.js');
    const callObj = {
      from: sender,
      to: await outer.getAddress(),
      data: outer.interface.encodeFunctionData('note', [7n, ethers.id('x'), 2n]),
    };
    const est = await result(rpc.url, 'svc_estimateGas', [callObj]);
    const gas = BigInt(await result(anvil.url, 'eth_estimateGas', [callObj]));
    const latest = await result(anvil.url, 'eth_getBlockByNumber', ['latest', false]);
    expect(BigInt(est.gasLimit)).toBe(gas);
    expect(est.baseFeePerGas).toBe(latest.baseFeePerGas);
    const costs = rpc.config.estimateGas;
    const nonce = BigInt(await provider.getTransactionCount(sender));
    const bytes = signedSizeTransaction(callObj, {
      chainId: 1337n,
      nonce,
      gasLimit: gas,
      baseFee: BigInt(latest.baseFeePerGas),
      priorityFee: priorityFee(costs, 0, gas),
    });
    const size = compressedSize(bytes);
    expect(size).toBeGreaterThan(50);
    // 1.2 × (variableCost × size / gasLimit + fixedCost), rounded up
    const expected =
      (12n * (costs.variableCostWei * BigInt(size) + costs.fixedCostWei * gas) + 10n * gas - 1n) / (10n * gas);
    expect(BigInt(est.priorityFeePerGas)).toBe(expected);
    // More calldata costs more per gas of the same call.
    const bigger = await result(rpc.url, 'svc_estimateGas', [
      { ...callObj, data: `${callObj.data}${ethers.hexlify(ethers.randomBytes(2000)).slice(2)}` },
    ]);
    expect(BigInt(bigger.priorityFeePerGas) * BigInt(bigger.gasLimit)).toBeGreaterThan(
      BigInt(est.priorityFeePerGas) * BigInt(est.gasLimit),
    );
  });

  it('error: a reverting call is error 3 carrying the revert data', async () => {
    const r = await call(rpc.url, 'svc_estimateGas', [
      { to: await outer.getAddress(), data: outer.interface.encodeFunctionData('bad') },
    ]);
    expect(r.error!.code).toBe(3);
    expect(r.error!.data).toMatch(/^0x08c379a0/);
  });
});

describe('ERC-4337 and asset changes', () => {
  it('behavior: bundler methods are forwarded, vendor_ renamed to the configured prefix', async () => {
    bundler.seen.length = 0;
    expect(await result(rpc.url, 'vendor_getUserOperationStatus', [ZERO_HASH])).toEqual({
      status: 'not_found',
      transactionHash: null,
    });
    expect(await result(rpc.url, 'eth_supportedEntryPoints', [])).toHaveLength(1);
    expect(bundler.seen).toEqual(['pimlico_getUserOperationStatus', 'eth_supportedEntryPoints']);
  });

  it('error: without a bundler the bundler methods say so (-32601)', async () => {
    const r = await call(converted.url, 'eth_sendUserOperation', [
      {
        sender,
        nonce: '0x0',
        callData: '0x',
        callGasLimit: '0x186a0',
        verificationGasLimit: '0x186a0',
        preVerificationGas: '0xc350',
        maxFeePerGas: '0x3b9aca00',
        maxPriorityFeePerGas: '0x3b9aca00',
        signature: '0x',
      },
      sender,
    ]);
    expect(r.error!.code).toBe(-32601);
    expect(r.error!.message).toMatch(/no bundler is configured.*RPC_BUNDLER_URL/);
  });

  it('behavior: vendor_simulateAssetChanges sums native, ERC-20, ERC-721 and ERC-1155 deltas per address', async () => {
    const to = await outer.getAddress();
    const inner = ((await outer.getFunction('inner')()) as string).toLowerCase();
    const other = wallet(3).address.toLowerCase();
    const me = sender.toLowerCase();
    const token = to.toLowerCase();
    const go = await result(rpc.url, 'vendor_simulateAssetChanges', [
      { from: sender, to, value: '0x3', data: outer.interface.encodeFunctionData('go') },
    ]);
    expect(go.changes).toEqual(
      [
        { address: me, assetType: 'native', token: null, tokenId: null, delta: '-3' },
        { address: inner, assetType: 'native', token: null, tokenId: null, delta: '3' },
      ].sort((a, b) => a.address.localeCompare(b.address)),
    );
    const moved = await result(rpc.url, 'vendor_simulateAssetChanges', [
      { from: sender, to, data: outer.interface.encodeFunctionData('moveTokens', [other]) },
    ]);
    const forOther = moved.changes.filter((c: { address: string }) => c.address === other);
    expect(forOther).toEqual([
      { address: other, assetType: 'erc20', token, tokenId: null, delta: '1000' },
      { address: other, assetType: 'erc721', token, tokenId: '0x2a', delta: '1' },
      { address: other, assetType: 'erc1155', token, tokenId: '0x5', delta: '3' },
      { address: other, assetType: 'erc1155', token, tokenId: '0x6', delta: '10' },
      { address: other, assetType: 'erc1155', token, tokenId: '0x7', delta: '20' },
    ]);
    expect(
      moved.changes.filter((c: { address: string }) => c.address === me).map((c: { delta: string }) => c.delta),
    ).toEqual(['-1000', '-1', '-3', '-10', '-20']);
    const bad = await call(rpc.url, 'vendor_simulateAssetChanges', [
      { to, data: outer.interface.encodeFunctionData('bad') },
    ]);
    expect(bad.error!.code).toBe(3);
  });
});

describe('svc_getProof', () => {
  it('behavior: answered by the state manager with the block as given', async () => {
    proofs.asked.length = 0;
    await result(rpc.url, 'svc_getProof', [sender, [], '0x5']);
    await result(rpc.url, 'svc_getProof', [sender, [ZERO_HASH], 'finalized']);
    expect(proofs.asked).toEqual([
      [sender, [], 5n],
      [sender, [ZERO_HASH], 'finalized'],
    ]);
  });

  it('error: without a state manager the method says it is not available', async () => {
    const r = await call(converted.url, 'svc_getProof', [sender, [], 'finalized']);
    expect(r.error!.message).toBe('svc_getProof is not available: this endpoint runs without a state manager');
  });

  it('error: latest is not a finalized block parameter (-32602)', async () => {
    const r = await call(rpc.url, 'svc_getProof', [sender, [], 'latest']);
    expect(r.error!.code).toBe(-32602);
  });
});
