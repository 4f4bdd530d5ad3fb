import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ethers } from 'ethers';
import { createPublicClient, http, webSocket, type Hex } from 'viem';
import { sendRawTransactionSync } from 'viem/actions';
import { openTestDb } from '../helpers/db.js';
import { call, chain, countingUpstream, post, startTestRpc, wallet, type CountingUpstream } from './helpers.js';
import type { Anvil } from '../../src/devnet/anvil.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * Issue 35 item 6 and issue 36: eth_sendRawTransaction's size cap before decoding (RPC_MAX_RAW_TX_BYTES),
 * its decode charged, its idempotent re-send, and eth_sendRawTransactionSync (EIP-7966), through real
 * clients (ethers v6, viem) against real anvil, each verdict next to anvil's own for the same bytes.
 * RPC_TRANSPORT=uws runs the same file on the other transport.
 */
let anvil: Anvil;
let provider: ethers.JsonRpcProvider;
let node: CountingUpstream;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
const stops: (() => Promise<unknown>)[] = [];

const CAP = 131_072;
const bytesOf = (raw: string) => (raw.length - 2) / 2;

beforeAll(async () => {
  ({ anvil, provider } = await chain());
  node = await countingUpstream(anvil.url);
  db = await openTestDb();
  rpc = await startTestRpc({ db: db.client, schema: db.schema('rpc'), upstreams: [node.url] });
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await rpc?.stop();
  await node?.close();
  await anvil?.stop();
  await db?.close();
});

/** A signed EIP-1559 transaction carrying `dataBytes` of calldata (gas enough for it), nonce as given. */
async function signed(
  signer: ethers.Wallet | ethers.HDNodeWallet,
  nonce: number,
  dataBytes = 0,
  value = 1n,
): Promise<string> {
  return signer.signTransaction({
    type: 2,
    chainId: 1337,
    nonce,
    to: '0x000000000000000000000000000000000000dEaD',
    value,
    data: `0x${'01'.repeat(dataBytes)}`,
    gasLimit: 21_000 + dataBytes * 40,
    maxFeePerGas: 10_000_000_000n,
    maxPriorityFeePerGas: 1n,
  });
}

const sends = () => node.counts.get('eth_sendRawTransaction') ?? 0;

describe('eth_sendRawTransaction: size before decoding', () => {
  it("error: past RPC_MAX_RAW_TX_BYTES the transaction is refused with geth's words before any decode; anvil refuses the same bytes too (unfunded key)", async () => {
    const raw = await signed(ethers.Wallet.createRandom(), 0, 500_000);
    const before = sends();
    const ours = await call(rpc.url, 'eth_sendRawTransaction', [raw]);
    const straight = await call(anvil.url, 'eth_sendRawTransaction', [raw]);
    expect(ours.error).toEqual({
      code: -32000,
      message: `oversized data: transaction size ${bytesOf(raw)}, limit ${CAP} (RPC_MAX_RAW_TX_BYTES)`,
      data: { cap: 'RPC_MAX_RAW_TX_BYTES', limit: CAP, received: bytesOf(raw) },
    });
    expect(straight.error?.message).toMatch(/insufficient funds/i);
    expect(sends() - before).toBe(0);
  });

  it('behavior: a funded transaction at the cap goes through and is mined; one past it is refused here though anvil (no size limit) would take it', async () => {
    const signer = wallet(3, provider);
    const nonce = await provider.getTransactionCount(signer.address);
    const atCap = await signed(signer, nonce, CAP - 200);
    expect(bytesOf(atCap)).toBeLessThanOrEqual(CAP);
    const hash = (await call(rpc.url, 'eth_sendRawTransaction', [atCap])).result as string;
    // anvil answers the send before its automine seals the block: wait for the receipt, bounded.
    expect((await mined((await provider.getTransaction(hash))!, 30_000)).status).toBe(1);

    const past = await signed(signer, nonce + 1, CAP + 1_000);
    expect((await call(rpc.url, 'eth_sendRawTransaction', [past])).error?.message).toMatch(
      /^oversized data: transaction size \d+, limit 131072 \(RPC_MAX_RAW_TX_BYTES\)$/,
    );
    // The one documented difference (docs/rpc-limits.md, "Raw transactions"): the cap protects the endpoint, not the
    // node's rule.
    expect((await call(anvil.url, 'eth_sendRawTransaction', [past])).result).toBe(ethers.keccak256(past));
  });

  it('error: bytes that do not decode are -32602 naming the param, and no node sees them', async () => {
    const before = sends();
    const r = await call(rpc.url, 'eth_sendRawTransaction', [`0x02${'c0'.repeat(3)}`]);
    expect(r.error?.code).toBe(-32602);
    expect(r.error?.message).toMatch(/^invalid params: param 0 \(signedTransaction\): not a signed transaction/);
    expect(sends() - before).toBe(0);
  });

  it('behavior: a raw transaction is charged by its size (1 unit per RPC_RATE_LIMIT_BYTES_PER_UNIT), refused or not, so a client sending large ones waits', async () => {
    const limited = await startTestRpc({
      db: db.client,
      schema: db.schema('rpc'),
      upstreams: [anvil.url],
      // 4 KiB a unit: the debt (~24 units) outlasts any gap between two calls on a loaded machine (1 unit a second).
      env: { RPC_RATE_LIMIT_PER_SECOND: '1', RPC_RATE_LIMIT_BURST: '3', RPC_RATE_LIMIT_BYTES_PER_UNIT: '4096' },
    });
    stops.push(limited.stop);
    const chainId = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_chainId', params: [] });
    // 1 unit for the call, 24 for ~98 KB at 4 KiB a unit: far past the 3 of the burst, the next call waits.
    const big = await call(limited.url, 'eth_sendRawTransaction', [
      await signed(ethers.Wallet.createRandom(), 0, 100_000),
    ]);
    expect(big.error?.message).toMatch(/insufficient funds/i);
    expect((await post(limited.url, chainId)).status).toBe(429);
  });

  it('behavior: an oversized transaction is charged by its size too, and a small one costs its unit only', async () => {
    const limited = await startTestRpc({
      db: db.client,
      schema: db.schema('rpc'),
      upstreams: [anvil.url],
      env: {
        RPC_RATE_LIMIT_PER_SECOND: '1',
        RPC_RATE_LIMIT_BURST: '3',
        RPC_RATE_LIMIT_BYTES_PER_UNIT: '4096',
        RPC_TRUSTED_PROXY_HOPS: '1',
      },
    });
    stops.push(limited.stop);
    const send = (raw: string, from: string) =>
      post(limited.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raw] }), {
        'x-forwarded-for': from,
      });
    const chainId = (from: string) =>
      post(limited.url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_chainId', params: [] }), {
        'x-forwarded-for': from,
      });
    const oversized = await send(await signed(ethers.Wallet.createRandom(), 0, 300_000), '10.5.0.1');
    expect(oversized.text).toContain('oversized data');
    expect((await chainId('10.5.0.1')).status).toBe(429);
    const small = await send(await signed(ethers.Wallet.createRandom(), 0, 100), '10.5.0.2');
    expect(small.text).toMatch(/insufficient funds/i);
    expect((await chainId('10.5.0.2')).status).toBe(200);
  });
});

describe('eth_sendRawTransaction: a re-send answers the hash', () => {
  it('behavior: ethers broadcastTransaction twice, mined in between: the same hash both times (straight to anvil the second is "nonce too low")', async () => {
    const ours = new ethers.JsonRpcProvider(rpc.url, 1337, { staticNetwork: true, cacheTimeout: -1 });
    const signer = wallet(4, provider);
    const raw = await signed(signer, await provider.getTransactionCount(signer.address));
    const first = await ours.broadcastTransaction(raw);
    expect((await mined(first))?.status).toBe(1);
    const again = await ours.broadcastTransaction(raw);
    expect(again.hash).toBe(first.hash);
    expect((await call(anvil.url, 'eth_sendRawTransaction', [raw])).error?.message).toBe('nonce too low');
    ours.destroy();
  });

  it('behavior: a re-send of a pending transaction answers its hash (anvil: "transaction already imported")', async () => {
    const signer = wallet(5, provider);
    const raw = await signed(signer, await provider.getTransactionCount(signer.address));
    await call(anvil.url, 'evm_setAutomine', [false]);
    try {
      const first = await call(rpc.url, 'eth_sendRawTransaction', [raw]);
      expect(first.result).toBe(ethers.keccak256(raw));
      expect((await call(anvil.url, 'eth_sendRawTransaction', [raw])).error?.message).toBe(
        'transaction already imported',
      );
      expect((await call(rpc.url, 'eth_sendRawTransaction', [raw])).result).toBe(first.result);
    } finally {
      await call(anvil.url, 'evm_setAutomine', [true]);
      await call(anvil.url, 'evm_mine', []);
    }
  });

  it('error: another transaction with a used nonce is still refused as the node refuses it', async () => {
    const signer = wallet(4, provider);
    const used = await signed(signer, 0, 0, 7n);
    const ours = await call(rpc.url, 'eth_sendRawTransaction', [used]);
    const straight = await call(anvil.url, 'eth_sendRawTransaction', [used]);
    expect(ours.error).toEqual(straight.error);
    expect(ours.error?.message).toBe('nonce too low');
  });
});

describe('eth_sendRawTransactionSync (EIP-7966)', () => {
  it('behavior: viem sendRawTransactionSync answers the receipt, over HTTP and over a WebSocket', async () => {
    for (const transport of [http(rpc.url), webSocket(rpc.url.replace('http://', 'ws://'), { reconnect: false })]) {
      const client = createPublicClient({ transport });
      const signer = wallet(6, provider);
      const raw = (await signed(signer, await provider.getTransactionCount(signer.address))) as Hex;
      const receipt = await sendRawTransactionSync(client, { serializedTransaction: raw, timeout: 5_000 });
      expect(receipt.transactionHash).toBe(ethers.keccak256(raw));
      expect(receipt.status).toBe('success');
      if (client.transport.type === 'webSocket')
        (await (client.transport as unknown as { getRpcClient(): Promise<{ close(): void }> }).getRpcClient()).close();
    }
  });

  it('behavior: with no block yet, the call waits for the head that mines it (no loop against the node)', async () => {
    const signer = wallet(7, provider);
    const raw = await signed(signer, await provider.getTransactionCount(signer.address));
    await call(anvil.url, 'evm_setAutomine', [false]);
    try {
      const waiting = call(rpc.url, 'eth_sendRawTransactionSync', [raw, '0x2710']);
      // Mined once the node holds it: the call is then between its first receipt lookup and the next head.
      for (
        let i = 0;
        i < 200 && (await call(anvil.url, 'eth_getTransactionByHash', [ethers.keccak256(raw)])).result === null;
        i++
      )
        await new Promise((r) => setTimeout(r, 25));
      const lookups = node.counts.get('eth_getTransactionReceipt') ?? 0;
      await call(anvil.url, 'evm_mine', []);
      const r = await waiting;
      expect(r.error).toBeUndefined();
      expect(r.result).toMatchObject({ transactionHash: ethers.keccak256(raw), status: '0x1' });
      // One lookup per head at most: the one block after the first lookup.
      expect((node.counts.get('eth_getTransactionReceipt') ?? 0) - lookups).toBeLessThanOrEqual(2);
    } finally {
      await call(anvil.url, 'evm_setAutomine', [true]);
    }
  });

  it('error: no receipt within the wait is error 4 with the hash as data, and the wait is capped by RPC_SEND_SYNC_TIMEOUT_MS', async () => {
    const capped = await startTestRpc({
      db: db.client,
      schema: db.schema('rpc'),
      upstreams: [anvil.url],
      env: { RPC_SEND_SYNC_TIMEOUT_MS: '300' },
    });
    stops.push(capped.stop);
    const signer = wallet(8, provider);
    const raw = await signed(signer, await provider.getTransactionCount(signer.address));
    await call(anvil.url, 'evm_setAutomine', [false]);
    try {
      // Asked for an hour: the endpoint waits its own cap.
      const r = await call(capped.url, 'eth_sendRawTransactionSync', [raw, 3_600_000]);
      expect(r.error).toEqual({
        code: 4,
        message:
          "The transaction was added to the transaction pool but wasn't processed in 300 ms (the wait is at most RPC_SEND_SYNC_TIMEOUT_MS = 300 ms); look it up by hash",
        data: ethers.keccak256(raw),
      });
    } finally {
      await call(anvil.url, 'evm_setAutomine', [true]);
      await call(anvil.url, 'evm_mine', []);
    }
    expect((await provider.getTransactionReceipt(ethers.keccak256(raw)))?.status).toBe(1);
  });

  it('error: an oversized transaction is refused by the Sync method as by the plain send', async () => {
    const raw = await signed(ethers.Wallet.createRandom(), 0, 200_000);
    const r = await call(rpc.url, 'eth_sendRawTransactionSync', [raw]);
    expect(r.error).toMatchObject({ code: -32000, data: { cap: 'RPC_MAX_RAW_TX_BYTES', limit: CAP } });
  });
});
