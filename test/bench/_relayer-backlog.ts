/**
 * Helpers of the relayer benchmarks (test/bench/relayer.ts, relayer-start.ts): the bench database, a backlog of
 * messages sent in JSON-RPC batches, and the wait until every one of them is claimable.
 */
import { randomBytes } from 'node:crypto';
import { parseEther, type Wallet } from 'ethers';
import { PGLITE_MEMORY, loadDatabaseConfig } from '../../src/common/db/config.js';
import { createDbClient, type DbClient } from '../../src/common/db/client.js';
import { L1MessageService__factory, L2MessageService__factory } from '../../generated/contracts/types/index.js';
import type { RelayerDevnet } from '../e2e/relayer/harness.js';

const FEE = parseEther('0.001');
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * A read of this bench's own, tried again (up to 5 times) when its connection was reset: on a loaded machine a
 * kept-alive socket to anvil is sometimes reset under a call, and one such read used to end the whole run.
 */
export async function retried<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      if (
        attempt >= 5 ||
        !/ECONNRESET|socket hang up|EPIPE|fetch failed/i.test(
          `${(err as Error).message} ${(err as { code?: string }).code ?? ''}`,
        )
      )
        throw err;
      await sleep(100 * attempt);
    }
  }
}
export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

export interface Sent {
  hash: string;
  nonce: bigint;
  block: number;
  from: string;
  to: string;
  fee: bigint;
  value: bigint;
  calldata: string;
}

export interface BenchDb {
  client: DbClient;
  schema(name: string): string;
  close(): Promise<void>;
}

/**
 * The database as test/helpers/db.ts opens it (Postgres when DATABASE_HOST is set, else PGlite in memory; a
 * schema prefix of its own), but with the relayer's own pool size (createDbClient's default, 10) instead of the
 * tests' 4: 4 connections shared by the relayer, the coordinator and this bench's polling timed out acquiring
 * one on Postgres at a 5,000 backlog.
 */
export async function openBenchDb(): Promise<BenchDb> {
  const client = await createDbClient(loadDatabaseConfig({ ...process.env, DATABASE_PGLITE_DIR: PGLITE_MEMORY }));
  const prefix = `bench${randomBytes(4).toString('hex')}`;
  const created: string[] = [];
  return {
    client,
    schema: (name) => {
      created.push(`${prefix}_${name}`);
      return `${prefix}_${name}`;
    },
    async close() {
      if (client.kind === 'postgres')
        for (const s of created) await client.knex.raw('drop schema if exists ?? cascade', [s]);
      await client.close();
    },
  };
}

/** JSON-RPC batch of calls to `url`; answers in call order. */
export async function rpcBatch(url: string, calls: { method: string; params: unknown[] }[]): Promise<unknown[]> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map((c, id) => ({ jsonrpc: '2.0', id, ...c }))),
  });
  const body = (await res.json()) as { id: number; result?: unknown; error?: { message: string } }[];
  return body
    .sort((a, b) => a.id - b.id)
    .map((a) => {
      if (a.error) throw new Error(`${calls[a.id]!.method}: ${a.error.message}`);
      return a.result;
    });
}

/**
 * Sends n EOA messages and returns them with their numbers and blocks. Signed here (nonce, gas limit and fees
 * given) and sent as JSON-RPC batches of SEND_BATCH, receipts read in batches: ethers' one call after another
 * per message (fee data, send, receipt polling) made sending 5,000 take minutes, longer than claiming them.
 */
const SEND_BATCH = 100;
export async function sendMany(d: RelayerDevnet, sender: Wallet, layer: 'l1' | 'l2', n: number): Promise<Sent[]> {
  const s = d.devnet.state;
  const chain = layer === 'l1' ? s.l1 : s.l2;
  const c =
    layer === 'l1'
      ? L1MessageService__factory.connect(chain.messageService, sender)
      : L2MessageService__factory.connect(chain.messageService, sender);
  let nonce = await retried(() => sender.getNonce('pending'));
  const to = d.wallet(12, layer).address;
  const fees = await retried(() => sender.provider!.getFeeData());
  const maxFeePerGas = (fees.maxFeePerGas ?? 10n ** 10n) * 2n;
  const hashes: string[] = [];
  const signed: string[] = [];
  for (let i = 0; i < n; i += SEND_BATCH) {
    const raws = [];
    for (let j = i; j < Math.min(n, i + SEND_BATCH); j++) {
      raws.push(
        await sender.signTransaction({
          type: 2,
          chainId: chain.chainId,
          nonce: nonce++,
          to: chain.messageService,
          value: FEE + BigInt(j + 1),
          gasLimit: 200_000n,
          maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas ?? 1n,
          data: c.interface.encodeFunctionData('sendMessage', [to, FEE, '0x']),
        }),
      );
    }
    hashes.push(
      ...((await rpcBatch(
        chain.rpcUrl,
        raws.map((r) => ({ method: 'eth_sendRawTransaction', params: [r] })),
      )) as string[]),
    );
    signed.push(...raws);
  }
  const out: Sent[] = [];
  for (let i = 0; i < hashes.length; i += SEND_BATCH) {
    const part = hashes.slice(i, i + SEND_BATCH);
    let receipts: ({ blockNumber: string; status: string; logs: { topics: string[]; data: string }[] } | null)[];
    for (let poll = 1; ; poll++) {
      receipts = (await retried(() =>
        rpcBatch(
          chain.rpcUrl,
          part.map((h) => ({ method: 'eth_getTransactionReceipt', params: [h] })),
        ),
      )) as typeof receipts;
      if (receipts.every((r) => r !== null)) break;
      // Under heavy load anvil once answered a send with its hash and kept no such transaction (a nonce gap
      // with 686 later sends queued behind it, and this loop waited for ever): every 2 s the sends still
      // without a receipt go again, the same bytes, whose "already known" answers are ignored.
      if (poll % 20 === 0) {
        const missing = part.flatMap((_, k) => (receipts[k] === null ? [signed[i + k]!] : []));
        await rpcBatch(
          chain.rpcUrl,
          missing.map((r) => ({ method: 'eth_sendRawTransaction', params: [r] })),
        ).catch(() => undefined);
      }
      await sleep(100);
    }
    for (const r of receipts) {
      if (r!.status !== '0x1') throw new Error(`a message send reverted in block ${Number(r!.blockNumber)}`);
      for (const log of r!.logs) {
        const p = c.interface.parseLog(log);
        if (p?.name !== 'MessageSent') continue;
        out.push({
          hash: String(p.args._messageHash),
          nonce: p.args._nonce as bigint,
          block: Number(r!.blockNumber),
          from: p.args._from as string,
          to: p.args._to as string,
          fee: p.args._fee as bigint,
          value: p.args._value as bigint,
          calldata: p.args._calldata as string,
        });
      }
    }
  }
  return out;
}

export async function allAnchored(d: RelayerDevnet, l1: Sent[], l2: Sent[]): Promise<void> {
  const s = d.devnet.state;
  const l2Service = L2MessageService__factory.connect(s.l2.messageService, d.wallet(15, 'l2'));
  const l1Service = L1MessageService__factory.connect(s.l1.messageService, d.wallet(15, 'l1'));
  while ((await retried(() => l2Service.inboxL1L2MessageStatus(l1.at(-1)!.hash))) !== 1n) await sleep(100);
  const lastBlock = Math.max(...l2.map((m) => m.block));
  while ((await retried(() => l1Service.currentL2BlockNumber())) < BigInt(lastBlock)) await sleep(100);
}
