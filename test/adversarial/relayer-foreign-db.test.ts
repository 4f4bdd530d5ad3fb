import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { Wallet, parseEther } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { startMessagePair, type MessagePair } from '../helpers/message-pair.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { messageHash } from '../../src/common/chain/messages.js';
import { nextRollingHash } from '../helpers/messages.js';
import { L1MessageService__factory, L2MessageService__factory } from '../../generated/contracts/types/index.js';
import {
  pairRelayerEnv,
  processDatabase,
  spawnRelayer,
  until,
  type ProcessDatabase,
  type RelayerProcess,
} from '../e2e/relayer/process.js';
import { startCanary } from './canary.js';
import { mined } from '../../src/common/chain/mined.js';
import { l2stackArgs } from '../helpers/l2stack.js';

/**
 * Issue 23 item 4: a relayer given the database of other chains. Devnet A (two anvils, the message services)
 * gets claims in flight (L2 mines nothing, so they sit PENDING with their signed transactions) and the relayer is
 * SIGKILLed. Devnet B is a reset testnet: same chain ids, same contract addresses, other genesis blocks. The
 * relayer started on B with A's database must exit 1 with one error line naming what differs, and send nothing on
 * B (the signer's nonce and B's pool stay empty). Then the operator's way out: `reset-chain-pin` refuses while
 * A's claims are unfinished, gives them up with --abandon-unfinished, and the relayer then runs on B, still
 * sending none of A's claims.
 */
const L1_ID = 59_100 + (process.pid % 100) * 2;
const L2_ID = L1_ID + 1;
const MESSAGES = 6;
const accounts = devAccounts(4);
const deployerKey = accounts[0]!.privateKey;
const relayerKey = accounts[2]!.privateKey;
const relayerAddress = accounts[2]!.address;

type Devnet = MessagePair;

const startPair = (genesisTimestamp: number) =>
  startMessagePair({ ids: [L1_ID, L2_ID], deployerKey, genesisTimestamp });

/** Sends `n` fee-paying L1→L2 messages on L1 and anchors their hashes on L2, as the coordinator would. */
async function sendAndAnchor(d: Devnet, n: number): Promise<string[]> {
  const sender = new Wallet(accounts[1]!.privateKey, d.p1);
  const l1 = L1MessageService__factory.connect(d.l1Service, sender);
  const hashes: string[] = [];
  let rolling = '0x' + '00'.repeat(32);
  for (let i = 0; i < n; i++) {
    const fee = parseEther('0.01');
    const receipt = await mined(l1.sendMessage(sender.address, fee, '0x', { value: fee }));
    const log = receipt.logs.map((l) => l1.interface.parseLog(l)).find((l) => l?.name === 'MessageSent')!;
    const h = messageHash({
      from: log.args._from as string,
      to: log.args._to as string,
      fee: log.args._fee as bigint,
      value: log.args._value as bigint,
      nonce: log.args._nonce as bigint,
      calldata: log.args._calldata as string,
    });
    hashes.push(h);
    rolling = nextRollingHash(rolling, h);
  }
  await d.p1.send('anvil_mine', ['0x3']);
  const l2 = L2MessageService__factory.connect(d.l2Service, new Wallet(deployerKey, d.p2));
  await mined(l2.anchorL1L2MessageHashes(hashes, 1, n, rolling));
  return hashes;
}

const envFor = (d: Devnet, db: ProcessDatabase) => pairRelayerEnv(d, db, relayerKey);

/** `l2stack relayer reset-chain-pin` with `args`: exit code and output. */
function resetPin(env: Record<string, string>, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, l2stackArgs('relayer', 'reset-chain-pin', ...args), {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => resolve({ code, out }));
  });
}

const pendingCount = async (url: string) => {
  const r = await fetch(`${url}/messages?status=PENDING&direction=L1_TO_L2&limit=1`).catch(() => undefined);
  return r?.ok ? ((await r.json()) as { meta: { totalItemsCount: number } }).meta.totalItemsCount : -1;
};
const nothingSentOnB = async (b: Devnet) => {
  expect(await b.p1.getTransactionCount(relayerAddress, 'pending')).toBe(0);
  expect(await b.p2.getTransactionCount(relayerAddress, 'pending')).toBe(0);
  const pool = (await b.p2.send('txpool_content', [])) as { pending: Record<string, unknown> };
  expect(Object.keys(pool.pending)).toEqual([]);
};

let testDb: Awaited<ReturnType<typeof openTestDb>>;
let db: ProcessDatabase;
let a: Devnet | undefined;
let b: Devnet | undefined;
const running: RelayerProcess[] = [];

beforeAll(async () => {
  testDb = await openTestDb();
  db = await processDatabase(testDb, 'foreign');
});
afterAll(async () => {
  for (const r of running) if (r.child.exitCode === null) r.child.kill('SIGKILL');
  await Promise.allSettled([a?.stop(), b?.stop()]);
  await db?.drop();
  await testDb?.close();
});

describe('adversarial: a relayer given the database of other chains', () => {
  it(
    'behavior: refuses chains B with the named mismatch, exits 1, sends nothing on B; reset-chain-pin is the way out',
    { timeout: 120_000 },
    async () => {
      const now = Math.floor(Date.now() / 1000);
      a = await startPair(now - 1_000);
      await sendAndAnchor(a, MESSAGES);
      await a.p2.send('evm_setAutomine', [false]); // claims reach A's pool and stay there: in flight
      const first = await spawnRelayer(envFor(a, db));
      running.push(first);
      await until(
        `${MESSAGES} claims PENDING on chains A`,
        async () => (await pendingCount(first.url)) === MESSAGES,
        60_000,
      );
      first.child.kill('SIGKILL');
      await first.exited;

      b = await startPair(now); // a reset testnet: same ids and addresses, other genesis
      expect([b.l1Service, b.l2Service]).toEqual([a.l1Service, a.l2Service]);
      const canary = startCanary('chain-b-node', {
        method: 'POST',
        url: b.l2.url,
        body: () =>
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'eth_getBalance',
            params: [Wallet.createRandom().address, 'latest'],
          }),
      });
      const second = await spawnRelayer(envFor(b, db));
      running.push(second);
      const code = await Promise.race([
        second.exited,
        new Promise<'running'>((r) => setTimeout(() => r('running'), 45_000)),
      ]);
      const report = await canary.stop();
      expect(code).toBe(1);
      const errors = second.lines.filter((l) => l.startsWith('{') && (JSON.parse(l) as { level: number }).level >= 50);
      expect(errors).toHaveLength(1);
      const msg = (JSON.parse(errors[0]!) as { msg: string }).msg;
      expect(msg).toMatch(
        /^the relayer database is pinned to other chains: L1 genesis block hash stored 0x[0-9a-f]{64}, now 0x[0-9a-f]{64}; L2 genesis block hash stored 0x[0-9a-f]{64}, now 0x[0-9a-f]{64}\. Nothing was sent\./,
      );
      expect(msg).toContain('reset-chain-pin');
      expect(second.lines.every((l) => l === '' || l.startsWith('{'))).toBe(true);
      await nothingSentOnB(b);
      expect(report.failed).toBe(0);

      // The operator's way out: refused while A's claims are unfinished, then given up explicitly.
      const refused = await resetPin(db.env, []);
      expect(refused.code).toBe(2);
      expect(refused.out).toContain(`${MESSAGES} PENDING message(s) are still in progress`);
      const reset = await resetPin(db.env, ['--abandon-unfinished']);
      expect(reset.out).toContain(`${MESSAGES} unfinished message(s) abandoned`);
      expect(reset.code).toBe(0);
      const third = await spawnRelayer(envFor(b, db));
      running.push(third);
      await until(
        'the relayer on B answers',
        async () => (await fetch(`${third.url}/health/live`).catch(() => undefined))?.ok === true,
        30_000,
      );
      await until(
        'the pin of B recorded',
        () => third.lines.some((l) => l.includes('database pinned to these chains')),
        30_000,
      );
      const abandoned = (await (
        await fetch(`${third.url}/messages?status=NEEDS_MANUAL_INTERVENTION&limit=1`)
      ).json()) as { meta: { totalItemsCount: number }; data: { failureReason: string }[] };
      expect(abandoned.meta.totalItemsCount).toBe(MESSAGES);
      expect(abandoned.data[0]!.failureReason).toMatch(/abandoned by operator at reset-chain-pin \(was PENDING/);
      await new Promise((r) => setTimeout(r, 2_000)); // a few receipt and claiming iterations on B
      expect(third.child.exitCode).toBe(null);
      await nothingSentOnB(b);
      third.child.kill('SIGTERM');
      expect(await third.exited).toBe(0);
    },
  );
});
