import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPublicClient,
  encodeFunctionData,
  http,
  parseAbi,
  parseEther,
  type Address,
  type PublicClient,
} from 'viem';
import { openTestDb } from '../helpers/db.js';
import { chain, deployOuter, startTestRpc, wallet } from './helpers.js';
import type { Anvil } from '../../src/devnet/anvil.js';

// viem's createAccessList and simulateBlocks through the endpoint, each compared with viem against anvil.
let anvil: Anvil;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let outer: Address;
let ours: PublicClient;
let direct: PublicClient;

const abi = parseAbi([
  'function go() payable returns (uint256)',
  'function note(uint256 n, bytes32 tag, uint256 count)',
]);
const account = wallet(0).address as Address;
const to = wallet(1).address as Address;

beforeAll(async () => {
  const started = await chain();
  anvil = started.anvil;
  outer = (await (await deployOuter(wallet(0, started.provider))).getAddress()) as Address;
  db = await openTestDb();
  rpc = await startTestRpc({ db: db.client, schema: db.schema('rpc'), upstreams: [anvil.url] });
  ours = createPublicClient({ transport: http(rpc.url) });
  direct = createPublicClient({ transport: http(anvil.url) });
});

afterAll(async () => {
  await rpc?.stop();
  await anvil?.stop();
  await db?.close();
});

const byAddress = <T extends { address: string }>(list: readonly T[]) =>
  [...list].sort((x, y) => x.address.localeCompare(y.address));

describe('viem against the endpoint', () => {
  it('behavior: createAccessList gives the access list and gas anvil gives', async () => {
    const request = { account, to: outer, data: encodeFunctionData({ abi, functionName: 'go' }), value: 1n };
    const got = await ours.createAccessList(request);
    const want = await direct.createAccessList(request);
    expect(byAddress(got.accessList)).toEqual(byAddress(want.accessList));
    expect(got.gasUsed).toBe(want.gasUsed);
    expect(got.accessList.map((e) => e.address.toLowerCase())).toContain(outer.toLowerCase());
  });

  it('behavior: simulateBlocks runs calls across blocks, each on the state the previous left, as anvil does', async () => {
    // Inline, so viem infers each call's abi and function (the types of the calls' results).
    const simulate = (client: PublicClient) =>
      client.simulateBlocks({
        blocks: [
          { calls: [{ account, to, value: parseEther('1') }] },
          {
            calls: [
              { account, to: outer, abi, functionName: 'note', args: [7n, `0x${'ab'.repeat(32)}`, 2n] },
              { account, to: outer, abi, functionName: 'go', value: 3n },
            ],
          },
        ],
      });
    const got = await simulate(ours);
    const want = await simulate(direct);
    expect(got).toHaveLength(2);
    expect(got.map((b) => b.calls.map((c) => [c.status, c.gasUsed, c.data, c.logs?.length]))).toEqual(
      want.map((b) => b.calls.map((c) => [c.status, c.gasUsed, c.data, c.logs?.length])),
    );
    expect(got[1]!.calls.map((c) => c.status)).toEqual(['success', 'success']);
    expect(got[1]!.calls[0]!.logs?.length).toBe(2);
    expect(got[1]!.number).toBe(got[0]!.number! + 1n);
  });
});
