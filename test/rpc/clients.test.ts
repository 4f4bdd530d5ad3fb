import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import { createPublicClient, createWalletClient, http, parseAbi, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { openTestDb } from '../helpers/db.js';
import { chain, deployOuter, outerArtifact, startTestRpc, wallet } from './helpers.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { mined } from '../../src/common/chain/mined.js';
import { waitFor } from '../helpers/chain.js';

let anvil: Anvil;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let address: string;

beforeAll(async () => {
  const started = await chain();
  anvil = started.anvil;
  address = await (await deployOuter(wallet(0, started.provider))).getAddress();
  db = await openTestDb();
  rpc = await startTestRpc({ db: db.client, schema: db.schema('rpc'), upstreams: [anvil.url] });
});

afterAll(async () => {
  await rpc?.stop();
  await anvil?.stop();
  await db?.close();
});

async function filterPolls(): Promise<number> {
  const text = await (await fetch(`${rpc.url}/metrics`)).text();
  const m = /l2stack_rpc_calls_total\{method="eth_getFilterChanges",outcome="ok"\} (\d+)/.exec(text);
  return m ? Number(m[1]) : 0;
}

/** Waits (30 s at most) until `client` has polled its filter once more than `before` polls; gives the count then. */
const pollsPast = (client: string, before: number) =>
  waitFor(
    `${client} to poll its filter`,
    async () => {
      const n = await filterPolls();
      return n > before ? n : undefined;
    },
    30_000,
    50,
  );

describe('ethers v6 against the endpoint', () => {
  it('behavior: block number, logs, event watching through filters, a signed transaction and a trace', async () => {
    const provider = new ethers.JsonRpcProvider(rpc.url, 1337, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 100,
    });
    const signer = wallet(6, provider);
    const contract = new ethers.Contract(address, outerArtifact().abi, signer);
    expect(await provider.getBlockNumber()).toBeGreaterThan(0);

    const polled = await filterPolls();
    const seen: bigint[] = [];
    await contract.on('Noted', (n: bigint) => void seen.push(n));
    // The event is sent once ethers polls its filter, so the filter exists before the logs do.
    const installed = await pollsPast('ethers', polled);
    const tx = (await contract.getFunction('note')(41n, ethers.id('ethers'), 2n)) as ethers.TransactionResponse;
    const receipt = (await mined(tx))!;
    await waitFor('the 2 logs through the filter', () => seen.length >= 2, 30_000, 50);
    await contract.removeAllListeners();
    expect(seen).toEqual([41n, 41n]);
    expect(await filterPolls()).toBeGreaterThan(installed); // the logs came by polling the filter

    const logs = await provider.getLogs({ address, fromBlock: receipt.blockNumber, toBlock: receipt.blockNumber });
    expect(logs).toHaveLength(2);
    const traces = (await provider.send('trace_transaction', [receipt.hash])) as { type: string }[];
    expect(traces[0]!.type).toBe('call');
    provider.destroy();
  });
});

describe('viem against the endpoint', () => {
  it('behavior: block number, logs, event watching through filters, a signed transaction and a trace', async () => {
    const client = createPublicClient({ transport: http(rpc.url) });
    const account = privateKeyToAccount(wallet(7).privateKey as Hex);
    const walletClient = createWalletClient({
      account,
      transport: http(rpc.url),
      chain: {
        id: 1337,
        name: 'devnet',
        nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
        rpcUrls: { default: { http: [rpc.url] } },
      },
    });
    const abi = parseAbi([
      'event Noted(uint256 indexed n, bytes32 indexed tag, uint256 extra)',
      'function note(uint256 n, bytes32 tag, uint256 count)',
    ]);
    expect(await client.getBlockNumber()).toBeGreaterThan(0n);

    const polled = await filterPolls();
    const seen: bigint[] = [];
    const unwatch = client.watchContractEvent({
      address: address as Hex,
      abi,
      eventName: 'Noted',
      poll: true,
      pollingInterval: 100,
      onLogs: (logs) => void seen.push(...logs.map((l) => l.args.n!)),
    });
    const installed = await pollsPast('viem', polled);
    const hash = await walletClient.writeContract({
      address: address as Hex,
      abi,
      functionName: 'note',
      args: [77n, ethers.id('viem') as Hex, 3n],
      chain: walletClient.chain,
    });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 30_000 });
    await waitFor('the 3 logs through the filter', () => seen.length >= 3, 30_000, 50);
    unwatch();
    expect(seen).toEqual([77n, 77n, 77n]);
    expect(await filterPolls()).toBeGreaterThan(installed); // the logs came by polling the filter

    const logs = await client.getLogs({
      address: address as Hex,
      fromBlock: receipt.blockNumber,
      toBlock: receipt.blockNumber,
    });
    expect(logs).toHaveLength(3);
    const trace = (await client.request({
      method: 'debug_traceTransaction' as never,
      params: [hash, { tracer: 'callTracer' }] as never,
    })) as { to: string };
    expect(trace.to.toLowerCase()).toBe(address.toLowerCase());
    const parity = (await client.request({
      method: 'trace_transaction' as never,
      params: [hash] as never,
    })) as unknown[];
    expect(parity.length).toBeGreaterThan(0);
  });
});
