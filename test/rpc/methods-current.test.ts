import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { waitFor } from '../helpers/chain.js';
import { startAnvil } from '../../src/devnet/anvil.js';
import { call, chain, countingUpstream, result, startTestRpc, wallet, type CountingUpstream } from './helpers.js';
import { nextBaseFee } from '../../src/rpc/methods/eth_baseFee.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { mined } from '../../src/common/chain/mined.js';

// execution-apis after v1.0.0-beta.7: eth_baseFee (#795) and eth_fillTransaction (#803), each compared
// with what anvil itself says; and answers that carry what the client sent as it was sent.
let anvil: Anvil;
let node: CountingUpstream;
let db: Awaited<ReturnType<typeof openTestDb>>;
/** In front of anvil directly: its newHeads keep the head live, so eth_baseFee is computed here. */
let live: Awaited<ReturnType<typeof startTestRpc>>;
/** In front of a counting proxy (no WebSocket): the head is never live, so eth_baseFee asks the node. */
let counted: Awaited<ReturnType<typeof startTestRpc>>;
let signer: ethers.HDNodeWallet;
let loop: string;

const from = wallet(0).address.toLowerCase();
const to = wallet(1).address.toLowerCase();
/** Deploys JUMPDEST PUSH1 0 JUMP: a loop that burns all the gas it is given. */
const LOOP_INIT = '0x6004600c60003960046000f35b600056';

beforeAll(async () => {
  const started = await chain();
  anvil = started.anvil;
  signer = wallet(0, started.provider);
  loop = (await mined(signer.sendTransaction({ data: LOOP_INIT })))!.contractAddress!.toLowerCase();
  node = await countingUpstream(anvil.url);
  db = await openTestDb();
  live = await startTestRpc({
    db: db.client,
    schema: db.schema('live'),
    upstreams: [anvil.url],
    env: { RPC_GAS_CAP: '1000000' },
  });
  counted = await startTestRpc({
    db: db.client,
    schema: db.schema('counted'),
    upstreams: [node.url],
    env: { RPC_GAS_CAP: '1000000' },
  });
});

afterAll(async () => {
  await live?.stop();
  await counted?.stop();
  await node?.close();
  await anvil?.stop();
  await db?.close();
});

/** The next block's base fee by anvil's own eth_feeHistory, once the endpoint has seen anvil's head. */
async function anvilNextBaseFee(): Promise<string> {
  const head = await result(anvil.url, 'eth_blockNumber');
  await waitFor(
    `the endpoint to see block ${head}`,
    async () => ((await result(live.url, 'eth_blockNumber')) === head ? true : undefined),
    20_000,
    50,
  );
  return (await result(anvil.url, 'eth_feeHistory', ['0x1', 'latest', []])).baseFeePerGas.at(-1);
}

describe('eth_baseFee', () => {
  it("behavior: equals anvil's next base fee after a block above the gas target, an empty block and a block below it", async () => {
    const seen: string[] = [];
    // 20,000,000 gas burnt of a 30,000,000 limit: above the 15,000,000 target, the fee rises.
    // (It fails out of gas: its receipt is read by hash, since wait() throws on a failed transaction.)
    const burnt = await signer.sendTransaction({ to: loop, gasLimit: 20_000_000n });
    const receipt = await waitFor(
      'the loop transaction',
      async () => (await result(anvil.url, 'eth_getTransactionReceipt', [burnt.hash])) ?? undefined,
      20_000,
      50,
    );
    expect(receipt.gasUsed).toBe(ethers.toQuantity(20_000_000n));
    seen.push(await anvilNextBaseFee());
    expect(await result(live.url, 'eth_baseFee')).toBe(seen.at(-1));
    expect(await result(counted.url, 'eth_baseFee')).toBe(seen.at(-1));
    // An empty block: the fee falls by 1/8.
    await result(anvil.url, 'evm_mine');
    seen.push(await anvilNextBaseFee());
    expect(await result(live.url, 'eth_baseFee')).toBe(seen.at(-1));
    expect(await result(counted.url, 'eth_baseFee')).toBe(seen.at(-1));
    // A transfer, far below the target; and the block the node then mines carries the fee we announced.
    const announced = await result(live.url, 'eth_baseFee');
    const transfer = await mined(signer.sendTransaction({ to, value: 1n }));
    expect(
      (await result(anvil.url, 'eth_getBlockByNumber', [ethers.toQuantity(transfer.blockNumber), false])).baseFeePerGas,
    ).toBe(announced);
    seen.push(await anvilNextBaseFee());
    expect(await result(live.url, 'eth_baseFee')).toBe(seen.at(-1));
    // The three blocks moved the fee three different ways: the comparisons above cover each.
    expect(new Set(seen).size).toBe(3);
    // anvil does not serve the method itself: the endpoint never forwards it.
    expect(await call(anvil.url, 'eth_baseFee')).toMatchObject({ error: { code: -32601 } });
    expect(node.counts.get('eth_baseFee') ?? 0).toBe(0);
    expect(node.counts.get('eth_feeHistory')).toBeGreaterThanOrEqual(2);
  });

  it("behavior: the EIP-1559 computation gives every block's successor the base fee anvil gave it", async () => {
    const head = Number(await result(anvil.url, 'eth_blockNumber'));
    expect(head).toBeGreaterThanOrEqual(4);
    // From block 1 on: anvil starts block 1 at its initial base fee (1 gwei), whatever the genesis says.
    for (let n = 1; n < head; n++) {
      const parent = await result(anvil.url, 'eth_getBlockByNumber', [ethers.toQuantity(n), false]);
      const child = await result(anvil.url, 'eth_getBlockByNumber', [ethers.toQuantity(n + 1), false]);
      expect(`0x${nextBaseFee(parent)!.toString(16)}`, `block ${n + 1}`).toBe(child.baseFeePerGas);
    }
    // A header without the EIP-1559 members (before London) has no next base fee here: the node is asked.
    expect(nextBaseFee({ number: '0x1', gasUsed: '0x0', gasLimit: '0x1c9c380' })).toBeUndefined();
  });
});

describe('eth_fillTransaction', () => {
  it('behavior: equals anvil for a transfer, an estimated contract call, a legacy price, a gas above RPC_GAS_CAP and mismatched fields', async () => {
    const cases: Record<string, unknown>[] = [
      { from, to, value: '0x1' },
      { from, to: loop, gas: '0x5208' },
      { from, to, gasPrice: '0x1' },
      // A given gas is copied, not run: passed on even above the endpoint's cap (1,000,000 here).
      { from, to, gas: '0xffffffffffffffff' },
      // Rules the endpoint keeps for calls do not apply: anvil fills these as sent.
      { from, to, data: '0x01', input: '0x02' },
      // Fees are checked only by a gas estimate that runs the call: a plain transfer to an address without code,
      // or a given gas, is filled with the fees as sent.
      { from, to, maxPriorityFeePerGas: '0x5', maxFeePerGas: '0x2' },
      { from, to, maxPriorityFeePerGas: '0x5', maxFeePerGas: '0x2', data: '0x12', gas: '0x98404' },
      { from, maxPriorityFeePerGas: '0x5', maxFeePerGas: '0x0', gas: '0x98404' },
      { from, to, maxPriorityFeePerGas: '0x5', input: '0x', data: '0x12' },
      { to },
    ];
    for (const tx of cases) {
      const ours = await call(counted.url, 'eth_fillTransaction', [tx]);
      expect(ours.error, JSON.stringify(tx)).toBeUndefined();
      expect(ours.result, JSON.stringify(tx)).toEqual((await call(anvil.url, 'eth_fillTransaction', [tx])).result);
    }
    expect(node.counts.get('eth_fillTransaction')).toBe(cases.length);
  });

  it("error: an estimate the node cannot make is the node's own error, passed on", async () => {
    const tx = { from, to: loop };
    const direct = await call(anvil.url, 'eth_fillTransaction', [tx]);
    expect(direct.error?.message).toContain('gas required exceeds allowance');
    expect((await call(counted.url, 'eth_fillTransaction', [tx])).error).toEqual(direct.error);
  });

  it('error: params anvil refuses as malformed are refused with -32602 before the node', async () => {
    const before = node.counts.get('eth_fillTransaction') ?? 0;
    for (const params of [[], [{ from: '0x12' }], [{ to, value: '0xzz' }]]) {
      expect(
        (await call(anvil.url, 'eth_fillTransaction', params)).error?.code,
        `anvil ${JSON.stringify(params)}`,
      ).toBe(-32602);
      expect((await call(counted.url, 'eth_fillTransaction', params)).error?.code, JSON.stringify(params)).toBe(-32602);
    }
    expect(node.counts.get('eth_fillTransaction') ?? 0).toBe(before);
  });

  it('error: what anvil refuses as malformed is refused first, with the same verdict; the member that makes anvil exit never reaches it', async () => {
    const h = `0x01${'00'.repeat(31)}`;
    const auth = [{ chainId: '0x1', address: from, nonce: '0x0', yParity: '0x0', r: '0x1', s: '0x1' }];
    const mirrored: [Record<string, unknown>, string][] = [
      [{ from, to, blobVersionedHashes: [h] }, 'blobVersionedHashes'],
      [{ from, to, maxFeePerBlobGas: '0x1', blobVersionedHashes: [h] }, 'maxFeePerBlobGas'],
      [{ from, authorizationList: auth }, 'to'],
      [{ from, to: null, authorizationList: auth }, 'to'],
      // An empty list with a gas too: anvil still builds an EIP-7702 transaction (found by test-coverage's random
      // calls).
      [{ from, to: null, gas: '0x98404', authorizationList: [] }, 'to'],
      [{ from, to, type: '0x7e' }, 'type'],
      // A creation with a priority fee and no maximum fee (found by test-coverage's random calls); with a to, anvil
      // fills the same fees (the first test's mismatched-fee case).
      [{ from, maxPriorityFeePerGas: '0xb2' }, 'maxPriorityFeePerGas'],
      [{ from, to: null, maxPriorityFeePerGas: '0xb2', maxFeePerGas: '0x1' }, 'maxPriorityFeePerGas'],
      // The same with a to, once the estimate runs the call: an input, an access list (found by test-coverage's
      // random calls: a gasPrice does not stand in for maxFeePerGas).
      [
        { from, to, gasPrice: '0x9', maxFeePerGas: '0x0', maxPriorityFeePerGas: '0x7', data: '0x12' },
        'maxPriorityFeePerGas',
      ],
      [{ from, to, maxPriorityFeePerGas: '0x7', input: '0x12', data: '0x' }, 'maxPriorityFeePerGas'],
      [{ from, to, maxPriorityFeePerGas: '0x7', maxFeePerGas: '0x6', accessList: [] }, 'maxPriorityFeePerGas'],
    ];
    const before = node.counts.get('eth_fillTransaction') ?? 0;
    for (const [tx, member] of mirrored) {
      expect((await call(anvil.url, 'eth_fillTransaction', [tx])).error?.code, `anvil ${JSON.stringify(tx)}`).toBe(
        -32602,
      );
      const ours = await call(counted.url, 'eth_fillTransaction', [tx]);
      expect([ours.error?.code, ours.error?.message.includes(`transaction.${member}`)], JSON.stringify(tx)).toEqual([
        -32602,
        true,
      ]);
    }
    // anvil panics on a blob fee without hashes: shown on a throwaway anvil, refused before ours.
    const doomed = await startAnvil({ port: 0, chainId: 1337 });
    try {
      const crash = { from, to, maxFeePerBlobGas: '0x1' };
      await expect(call(doomed.url, 'eth_fillTransaction', [crash])).rejects.toThrow();
      await expect(call(doomed.url, 'eth_chainId')).rejects.toThrow();
      expect((await call(counted.url, 'eth_fillTransaction', [crash])).error?.code).toBe(-32602);
    } finally {
      await doomed.stop();
    }
    expect(node.counts.get('eth_fillTransaction') ?? 0).toBe(before);
    // An empty authorization list, and blobs without hashes, are the node's to judge.
    for (const tx of [
      { from, to, authorizationList: [] },
      { from, to: null, authorizationList: [] },
    ]) {
      expect((await call(counted.url, 'eth_fillTransaction', [tx])).error, JSON.stringify(tx)).toEqual(
        (await call(anvil.url, 'eth_fillTransaction', [tx])).error,
      );
    }
  });
});

describe('eth_getProof', () => {
  it("behavior: storage keys come back as geth writes the key sent (0x0 stays 0x0), the proofs are anvil's", async () => {
    const upper = `0x${'0'.repeat(62)}AB`;
    const keys = ['0x0', '0x1', upper, '0x00ab', `0x${'0'.repeat(63)}2`, '0x', `0x${'0'.repeat(62)}3`];
    // geth (internal/ethapi GetProof): a 32-byte key as its lower-case word, a shorter one as a quantity.
    const gethKeys = ['0x0', '0x1', upper.toLowerCase(), '0xab', `0x${'0'.repeat(63)}2`, '0x0', `0x${'0'.repeat(63)}3`];
    const words = keys.map((k) => `0x${k.slice(2).toLowerCase().padStart(64, '0')}`);
    for (const endpoint of [live.url, counted.url]) {
      const ours = await result(endpoint, 'eth_getProof', [loop, keys]);
      const direct = await result(anvil.url, 'eth_getProof', [loop, words, 'latest']);
      expect(ours.storageProof.map((p: { key: string }) => p.key)).toEqual(gethKeys);
      // Everything else is the node's answer.
      expect({ ...ours, storageProof: ours.storageProof.map((p: object) => ({ ...p, key: '' })) }).toEqual({
        ...direct,
        storageProof: direct.storageProof.map((p: object) => ({ ...p, key: '' })),
      });
    }
    // Keys sent as the node's own words: the node's answer as it is.
    const plain = await result(counted.url, 'eth_getProof', [loop, [words[0]], 'latest']);
    expect(plain).toEqual(await result(anvil.url, 'eth_getProof', [loop, [words[0]], 'latest']));
  });
});
