import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { call, chain, countingUpstream, startTestRpc, wallet, type CountingUpstream } from './helpers.js';
import { gasAsTheNodeFills } from '../../src/rpc/methods/eth_simulateV1.js';
import type { Anvil } from '../../src/devnet/anvil.js';

// eth_simulateV1's omitted gas as geth's simulator fills it (min of the block's gas left and the budget
// left, in call order; -38015 when a block is exhausted), compared with anvil sent that same gas directly:
// anvil 1.7.1 fills nothing itself, so the gas each call carries decides the simulated blocks' hashes.
let anvil: Anvil;
let node: CountingUpstream;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let small: Awaited<ReturnType<typeof startTestRpc>>;

const from = wallet(0).address.toLowerCase();
const to = wallet(1).address.toLowerCase();
const transfer = (gas?: bigint) => ({
  from,
  to,
  value: '0x1',
  ...(gas === undefined ? {} : { gas: `0x${gas.toString(16)}` }),
});
/** A contract that writes a slot: uses more than a transfer (~43,000 gas). */
const store = '0x' + '5'.repeat(40);
const STORE = '0x6001600055';
const write = { from, to: store };
const BLOCK = 30_000_000n; // anvil's default block gas limit

beforeAll(async () => {
  anvil = (await chain()).anvil;
  node = await countingUpstream(anvil.url);
  db = await openTestDb();
  rpc = await startTestRpc({ db: db.client, schema: db.schema('rpc'), upstreams: [node.url] });
  small = await startTestRpc({
    db: db.client,
    schema: db.schema('small'),
    upstreams: [node.url],
    env: { RPC_GAS_CAP: '100000' },
  });
});

afterAll(async () => {
  await rpc?.stop();
  await small?.stop();
  await node?.close();
  await anvil?.stop();
  await db?.close();
});

type Blocks = {
  hash: string;
  transactionsRoot: string;
  receiptsRoot: string;
  stateRoot: string;
  gasUsed: string;
  transactions: { gas: string }[];
}[];
const simulate = (url: string, blockStateCalls: unknown[]) =>
  call(url, 'eth_simulateV1', [{ blockStateCalls, returnFullTransactions: true }, 'latest']);
const roots = (blocks: Blocks) =>
  blocks.map((b) => [b.hash, b.transactionsRoot, b.receiptsRoot, b.stateRoot, b.gasUsed]);

describe('eth_simulateV1 gas as the node fills it', () => {
  it("behavior: omitted gas is the block's gas left in call order; the blocks equal anvil sent that gas (hashes and roots)", async () => {
    const overrides = { [store]: { code: STORE } };
    // What the slot write uses, asked of anvil (an SSTORE to an empty slot; far below any fill here).
    const probe = await simulate(anvil.url, [{ stateOverrides: overrides, calls: [{ ...write, gas: '0x186a0' }] }]);
    const written = BigInt((probe.result as { calls: { gasUsed: string }[] }[])[0]!.calls[0]!.gasUsed);
    expect(written).toBeGreaterThan(21_000n);
    const cases: { name: string; payload: unknown[]; expected: unknown[] }[] = [
      // Two transfers: the second gets what the first left of the block.
      {
        name: 'two transfers',
        payload: [{ calls: [transfer(), transfer()] }],
        expected: [{ calls: [transfer(BLOCK), transfer(BLOCK - 21_000n)] }],
      },
      // A lowered block gas limit is the fill; a given gas is kept and counted as used gas, not as given.
      {
        name: 'lowered gasLimit',
        payload: [
          {
            blockOverrides: { gasLimit: '0x186a0' },
            stateOverrides: overrides,
            calls: [transfer(30_000n), write, transfer()],
          },
        ],
        expected: [
          {
            blockOverrides: { gasLimit: '0x186a0' },
            stateOverrides: overrides,
            calls: [transfer(30_000n), { ...write, gas: '0x13498' }, transfer(100_000n - 21_000n - written)],
          },
        ],
      },
      // Each block starts with its whole limit.
      {
        name: 'two blocks',
        payload: [{ calls: [transfer()] }, { calls: [transfer(), transfer()] }],
        expected: [{ calls: [transfer(BLOCK)] }, { calls: [transfer(BLOCK), transfer(BLOCK - 21_000n)] }],
      },
    ];
    for (const c of cases) {
      const ours = await simulate(rpc.url, c.payload);
      const direct = await simulate(anvil.url, c.expected);
      expect(ours.error, c.name).toBeUndefined();
      expect(roots(ours.result as Blocks), c.name).toEqual(roots(direct.result as Blocks));
      expect(
        (ours.result as Blocks).flatMap((b) => b.transactions.map((t) => t.gas)),
        c.name,
      ).toEqual((c.expected as { calls: { gas: string }[] }[]).flatMap((b) => b.calls.map((x) => x.gas)));
      expect(ours.result, c.name).toEqual(direct.result);
    }
  });

  it('behavior: RPC_GAS_CAP bounds the whole simulation: omitted gas gets at most what the budget has left', async () => {
    // Cap 100,000: the first transfer gets the cap, the second what the first left of it.
    const ours = await simulate(small.url, [{ calls: [transfer(), transfer()] }]);
    expect((ours.result as Blocks)[0]!.transactions.map((t) => t.gas)).toEqual([
      '0x186a0',
      `0x${(100_000n - 21_000n).toString(16)}`,
    ]);
    expect(ours.result).toEqual(
      (await simulate(anvil.url, [{ calls: [transfer(100_000n), transfer(79_000n)] }])).result,
    );
  });

  it('error: a call that needs more gas than its block has left is -38015, as a node answers it; anvil 1.7.1 runs it past the limit', async () => {
    const before = node.counts.get('eth_simulateV1') ?? 0;
    const full = [{ blockOverrides: { gasLimit: '0xa410' }, calls: [transfer(21_000n), transfer(21_001n)] }];
    const r = await simulate(rpc.url, full);
    expect(r.error?.code).toBe(-38015);
    expect(r.error?.message).toContain('block gas limit reached');
    expect(r.error?.message).toContain('blockStateCalls[0].calls[1]');
    // The block is exhausted for a call without gas too.
    const exhausted = await simulate(rpc.url, [
      { blockOverrides: { gasLimit: '0x5208' }, calls: [transfer(21_000n), transfer()] },
    ]);
    expect(exhausted.error?.code).toBe(-38015);
    // anvil answers the first as if the limit were not there: the verdict is the node's (geth's), not anvil's.
    expect((await simulate(anvil.url, full)).result?.[0]?.gasUsed).toBe('0xa410');
    // One measuring run each, no second run once the verdict is known.
    expect((node.counts.get('eth_simulateV1') ?? 0) - before).toBe(2);
  });

  it('error: a call without a to is refused as anvil refuses it (-32602, missing to), before the node', async () => {
    const creations = [
      { from, input: '0x00', gas: '0x100000' },
      { from, to: null, value: '0x1', gas: '0x100000', maxFeePerGas: '0x3b9aca00' },
    ];
    for (const c of creations) {
      const direct = await simulate(anvil.url, [{ calls: [c] }]);
      expect([direct.error?.code, direct.error?.message.includes('"to"')], `anvil ${JSON.stringify(c)}`).toEqual([
        -32602,
        true,
      ]);
    }
    const sent = node.counts.get('eth_simulateV1') ?? 0;
    for (const c of creations) {
      const ours = await simulate(rpc.url, [{ calls: [transfer(), c] }]);
      expect(
        [ours.error?.code, ours.error?.message.includes('blockStateCalls.0.calls.1.to')],
        JSON.stringify(c),
      ).toEqual([-32602, true]);
    }
    expect(node.counts.get('eth_simulateV1') ?? 0).toBe(sent);
  });

  it('args: given gas that fits is sent as given, in one run', async () => {
    const before = node.counts.get('eth_simulateV1') ?? 0;
    const payload = [{ calls: [transfer(21_000n), transfer(25_000n)] }];
    expect((await simulate(rpc.url, payload)).result).toEqual((await simulate(anvil.url, payload)).result);
    expect((node.counts.get('eth_simulateV1') ?? 0) - before).toBe(1);
  });

  it('behavior: the fill follows what the calls used, whatever the first run gave them', () => {
    const payload = { blockStateCalls: [{ calls: [transfer(), transfer(50_000n), transfer()] }] };
    const measured = [
      { gasLimit: '0x30d40', calls: [{ gasUsed: '0x5208' }, { gasUsed: '0x5208' }, { gasUsed: '0x5208' }] },
    ];
    const filled = gasAsTheNodeFills(payload, measured, 50_000_000n);
    expect(filled.blockStateCalls[0]!.calls!.map((c) => c.gas)).toEqual([
      '0x30d40',
      '0xc350',
      `0x${(200_000n - 42_000n).toString(16)}`,
    ]);
  });

  it('behavior: the empty blocks a node puts in where a block number skips ahead are not taken for requested blocks', () => {
    const payload = {
      blockStateCalls: [{ blockOverrides: { number: '0x5' }, calls: [transfer()] }, { calls: [transfer()] }],
    };
    // As geth answers it: blocks 0x3 and 0x4 are put in, empty, before the requested 0x5.
    const measured = [
      { number: '0x3', gasLimit: '0x1', calls: [] },
      { number: '0x4', gasLimit: '0x1', calls: [] },
      { number: '0x5', gasLimit: '0x30d40', calls: [{ gasUsed: '0x5208' }] },
      { number: '0x6', gasLimit: '0x186a0', calls: [{ gasUsed: '0x5208' }] },
    ];
    const filled = gasAsTheNodeFills(payload, measured, 50_000_000n);
    expect(filled.blockStateCalls.map((b) => b.calls![0]!.gas)).toEqual(['0x30d40', '0x186a0']);
  });
});
