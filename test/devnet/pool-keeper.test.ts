import { Transaction, Wallet, keccak256 } from 'ethers';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import { createProvider } from '../../src/common/chain/provider.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { keepPool } from '../../src/devnet/pool-keeper.js';
import type { Logger } from '../../src/common/log.js';
import { waitFor } from '../helpers/chain.js';

/**
 * The pool keeper on a real anvil, in the state CI met ("1 of 3 mined, txpool pending 0, queued 2"): a transaction
 * parked in the pool for a nonce the chain has passed. Made here on purpose: nonce n+1 sent while the account is
 * at n waits for n; anvil_setNonce then moves the account to n+1 without n ever being pooled or mined, so nothing
 * releases it. Without the keeper it stays parked (and a re-send changes nothing); with it, it is mined.
 */
describe('pool keeper', () => {
  const chains: Anvil[] = [];
  afterAll(async () => {
    await Promise.all(chains.map((c) => c.stop()));
  });

  async function park(poolKeeperMs: number) {
    const chainId = 31_998;
    const anvil = await startAnvil({ port: 0, chainId, accounts: 2, poolKeeperMs });
    chains.push(anvil);
    const provider = createProvider(anvil.url, chainId, { pollingInterval: 50 });
    const wallet = new Wallet(devAccounts(2)[1]!.privateKey, provider);
    const nonce = await provider.getTransactionCount(wallet.address, 'latest');
    const fees = await provider.getFeeData();
    const raws = await Promise.all(
      [1, 2, 5].map((i) =>
        wallet.signTransaction({
          type: 2,
          chainId,
          nonce: nonce + i,
          to: wallet.address,
          value: 1n,
          gasLimit: 21_000,
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        }),
      ),
    );
    await provider.send('eth_sendRawTransaction', [raws[0]]);
    await provider.send('anvil_setNonce', [wallet.address, `0x${(nonce + 1).toString(16)}`]);
    await provider.send('evm_mine', []);
    await provider.send('eth_sendRawTransaction', [raws[1]]);
    await provider.send('eth_sendRawTransaction', [raws[2]]);
    return { provider, wallet, nonce, hashes: raws.slice(0, 2).map((r) => keccak256(r)), raws };
  }

  it("behavior: without the keeper, anvil keeps a transaction at its sender's nonce queued for good", async () => {
    const { provider, raws, hashes } = await park(0);
    expect(await provider.send('txpool_status', [])).toMatchObject({ pending: '0x0', queued: '0x3' });
    await expect(provider.send('eth_sendRawTransaction', [raws[0]])).rejects.toThrow(/already imported|already known/i);
    await provider.send('evm_mine', []);
    expect(await provider.send('eth_getTransactionReceipt', [hashes[0]])).toBeNull();
    provider.destroy();
  });

  it('behavior: with the keeper (the default), the parked transaction and the one behind it are mined, nobody re-sending', async () => {
    const { provider, wallet, nonce, hashes } = await park(100);
    await waitFor(
      'both parked transactions to be mined',
      async () => ((await provider.getTransactionCount(wallet.address, 'latest')) === nonce + 3 ? true : undefined),
      10_000,
      50,
    );
    for (const hash of hashes) expect((await provider.getTransactionReceipt(hash))?.status).toBe(1);
    // A gap a client made is not the keeper's to fill: nonce n+5, sent before the release, is still queued after it.
    expect(await provider.send('txpool_status', [])).toMatchObject({ pending: '0x0', queued: '0x1' });
    provider.destroy();
  });

  it('behavior: a transaction that reaches the pool while the keeper releases its sender is sent again too', async () => {
    // A scripted node: nonce 1 parked at the account's nonce; nonce 2 arrives while the keeper reads the account's
    // nonce, as the test above's second send did under load (a removal after a read of its own took it, unsent).
    const wallet = Wallet.createRandom();
    const signed = await Promise.all(
      [1, 2].map((nonce) =>
        wallet.signTransaction({ type: 2, chainId: 1, nonce, to: wallet.address, gasLimit: 21_000, maxFeePerGas: 1 }),
      ),
    );
    const entry = (raw: string) => {
      const t = Transaction.from(raw);
      const hex = (n: bigint | number) => `0x${n.toString(16)}`;
      const { r, s, v } = t.signature!;
      return {
        hash: t.hash!,
        nonce: hex(t.nonce),
        type: '0x2',
        chainId: '0x1',
        gas: hex(t.gasLimit),
        to: t.to!,
        value: '0x0',
        input: '0x',
        maxFeePerGas: '0x1',
        maxPriorityFeePerGas: '0x0',
        accessList: [],
        r,
        s,
        v: hex(v - 27),
      };
    };
    const sender = wallet.address;
    const queued: Record<string, ReturnType<typeof entry>> = { 1: entry(signed[0]!) };
    const removed: string[] = [];
    const resent: string[] = [];
    const answer = ({ method, params }: { method: string; params: string[] }): unknown => {
      if (method === 'txpool_status') return { pending: '0x0', queued: `0x${Object.keys(queued).length.toString(16)}` };
      if (method === 'txpool_content') return { pending: {}, queued: { [sender]: { ...queued } } };
      if (method === 'eth_getTransactionCount') {
        queued[2] ??= entry(signed[1]!);
        return '0x1';
      }
      if (method === 'eth_getRawTransactionByHash') return signed.find((raw) => keccak256(raw) === params[0]);
      if (method === 'anvil_removePoolTransactions') {
        removed.push(...Object.values(queued).map((t) => t.hash));
        for (const n of Object.keys(queued)) delete queued[n];
      }
      if (method === 'eth_sendRawTransaction') resent.push(keccak256(params[0]!));
      return null;
    };
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const calls = JSON.parse(body) as { id: number; method: string; params: string[] }[] | { id: number };
        const reply = (c: { id: number; method: string; params: string[] }) => ({
          jsonrpc: '2.0',
          id: c.id,
          result: answer(c),
        });
        res.end(JSON.stringify(Array.isArray(calls) ? calls.map(reply) : reply(calls as never)));
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const stop = new AbortController();
    let released = false;
    const logger = { warn: () => (released = true), error: () => {} } as unknown as Logger; // warn: sent again
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const keeper = keepPool(url, 20, stop.signal, logger);
    await waitFor('the keeper to release the sender', async () => (released ? true : undefined), 5_000, 20);
    stop.abort();
    await keeper;
    server.close();
    expect(removed).toEqual(signed.map((raw) => keccak256(raw)));
    expect(resent).toEqual(removed);
  });
});
