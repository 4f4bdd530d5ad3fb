import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { call, chain, deployOuter, resultValidator, startTestRpc, wallet } from '../rpc/helpers.js';
import { countingNode, type CountingNode } from './counting-node.js';
import { executionApis, type ExecutionApisCheck } from './execution-apis.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { mined } from '../../src/common/chain/mined.js';

let anvil: Anvil;
let node: CountingNode;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let official: ExecutionApisCheck;
let ours: Awaited<ReturnType<typeof resultValidator>>;

beforeAll(async () => {
  ({ anvil } = await chain());
  node = await countingNode(anvil.url);
  db = await openTestDb();
  rpc = await startTestRpc({ db: db.client, schema: db.schema('rpc'), upstreams: [node.url] });
  official = executionApis();
  ours = await resultValidator();
});

afterAll(async () => {
  await rpc?.stop();
  await node?.close();
  await anvil?.stop();
  await db?.close();
});

describe('eth_ results against the official execution-apis schemas', () => {
  it('behavior: every eth_ result the endpoint returns conforms to the vendored execution-apis result schema and to ours', async () => {
    // Activity made through the endpoint itself: a deployment (eth_sendRawTransaction), logs, a transfer.
    const provider = new ethers.JsonRpcProvider(rpc.url, 1337, { staticNetwork: true, cacheTimeout: -1 });
    const signer = wallet(0, provider);
    const outer = await deployOuter(signer);
    const filterId = (await call(rpc.url, 'eth_newFilter', [{ fromBlock: '0x0', address: await outer.getAddress() }]))
      .result as string;
    const blockFilterId = (await call(rpc.url, 'eth_newBlockFilter', [])).result as string;
    const noted = await mined(outer.getFunction('note')(7n, ethers.id('tag'), 3n));
    const sent = await mined(signer.sendTransaction({ to: wallet(1).address, value: 1n, type: 1, accessList: [] }));
    const address = await outer.getAddress();
    const block = noted!.blockNumber;
    const blockHex = ethers.toQuantity(block);
    const blockHash = noted!.blockHash;
    const data = outer.interface.encodeFunctionData('go');
    const raw = await signer.signTransaction(await signer.populateTransaction({ to: wallet(2).address, value: 1n }));

    const calls: [string, unknown[]][] = [
      ['eth_chainId', []],
      ['eth_blockNumber', []],
      ['eth_syncing', []],
      ['eth_gasPrice', []],
      ['eth_maxPriorityFeePerGas', []],
      ['eth_feeHistory', ['0x4', 'latest', [10, 90]]],
      ['eth_getBalance', [signer.address, 'latest']],
      ['eth_getBalance', [signer.address, { blockHash }]],
      ['eth_getTransactionCount', [signer.address]],
      ['eth_getCode', [address, blockHex]],
      ['eth_getStorageAt', [address, '0x0', 'latest']],
      ['eth_call', [{ to: address, data }, 'latest']],
      ['eth_estimateGas', [{ from: signer.address, to: address, input: data }]],
      ['eth_getBlockByNumber', [blockHex, false]],
      ['eth_getBlockByNumber', ['latest', true]],
      ['eth_getBlockByNumber', ['0x0', true]],
      ['eth_getBlockByNumber', ['0xffffff', false]],
      ['eth_getBlockByHash', [blockHash, true]],
      ['eth_getBlockTransactionCountByNumber', [blockHex]],
      ['eth_getBlockTransactionCountByHash', [blockHash]],
      ['eth_getTransactionByHash', [noted!.hash]],
      ['eth_getTransactionByHash', [sent!.hash]],
      ['eth_getTransactionByHash', [ethers.id('missing')]],
      ['eth_getTransactionByBlockNumberAndIndex', [blockHex, '0x0']],
      ['eth_getTransactionByBlockHashAndIndex', [blockHash, '0x0']],
      ['eth_getTransactionReceipt', [noted!.hash]],
      ['eth_getTransactionReceipt', [sent!.hash]],
      ['eth_getTransactionReceipt', [ethers.id('missing')]],
      ['eth_getBlockReceipts', [blockHex]],
      ['eth_getBlockReceipts', [blockHash]],
      ['eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest', address }]],
      ['eth_getLogs', [{ blockHash }]],
      ['eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x0' }]],
      ['eth_getFilterChanges', [filterId]],
      ['eth_getFilterLogs', [filterId]],
      ['eth_getFilterChanges', [blockFilterId]],
      ['eth_uninstallFilter', [filterId]],
      ['eth_newFilter', [{ address, topics: [null] }]],
      ['eth_newBlockFilter', []],
      ['eth_getProof', [address, ['0x0', '0x1']]],
      ['eth_getProof', [address, [], blockHex]],
      ['eth_sendRawTransaction', [raw]],
      ['eth_blobBaseFee', []],
      ['eth_baseFee', []],
      ['eth_fillTransaction', [{ from: signer.address, to: address, data }]],
      ['eth_fillTransaction', [{ from: signer.address, to: wallet(3).address, value: '0x1', gasPrice: '0x3b9aca00' }]],
      ['eth_createAccessList', [{ from: signer.address, to: address, data }, 'latest']],
      [
        'eth_simulateV1',
        [
          {
            blockStateCalls: [
              {
                calls: [
                  { from: signer.address, to: address, input: data },
                  { from: signer.address, to: wallet(3).address, value: '0x1' },
                ],
              },
              { calls: [] },
            ],
          },
          'latest',
        ],
      ],
      ['eth_newPendingTransactionFilter', []],
    ];
    const problems: string[] = [];
    const additions = new Map<string, Set<string>>();
    const checked = new Set<string>();
    for (const [method, params] of calls) {
      const reply = await call(rpc.url, method, params);
      const where = `${method} ${JSON.stringify(params)}`;
      if (reply.error) {
        problems.push(`${where}: error ${reply.error.code} ${reply.error.message}`);
        continue;
      }
      checked.add(method);
      const verdict = official.check(method, reply.result);
      if (verdict.problem) problems.push(`${where}: execution-apis: ${verdict.problem}`);
      for (const a of verdict.additions)
        (additions.get(method) ?? additions.set(method, new Set()).get(method)!).add(a);
      const own = ours(method, reply.result);
      if (own) problems.push(`${where}: our spec: ${own}`);
    }
    console.info(
      `execution-apis: ${calls.length} calls, ${checked.size} methods checked; node additions passed: ${[...additions].map(([m, s]) => `${m}: ${[...s].join(', ')}`).join('; ') || 'none'}`,
    );
    expect(problems).toEqual([]);
    // Every eth_ method we serve that the execution-apis define was exercised here.
    const served = (await import('../../src/rpc/spec.js')).loadRpcSpec;
    const ethServed = (await served()).dereferenced.methods
      .map((m) => m.name)
      .filter((m) => m.startsWith('eth_') && official.methods.has(m));
    expect(ethServed.filter((m) => !checked.has(m))).toEqual([]);
    expect(node.refusals).toEqual([]);
  });
});
