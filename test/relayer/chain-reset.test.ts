import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Wallet, parseEther } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { startMessagePair, type MessagePair } from '../helpers/message-pair.js';
import { within } from '../helpers/within.js';
import { devAccounts } from '../../src/devnet/accounts.js';
import { messageHash } from '../../src/common/chain/messages.js';
import { nextRollingHash } from '../helpers/messages.js';
import { L1MessageService__factory, L2MessageService__factory } from '../../generated/contracts/types/index.js';
import {
  metricSum,
  pairRelayerEnv,
  processDatabase,
  records,
  spawnRelayer,
  until,
  type MessageRecord,
  type ProcessDatabase,
  type RelayerProcess,
} from '../e2e/relayer/process.js';
import { mined } from '../../src/common/chain/mined.js';

/**
 * Issue 35 item 7: a chain reset under a running relayer. Devnet A (two anvils and the message services) gets two
 * messages claimed and a third sent but not anchored. Then both anvils are replaced on the same ports by devnet B:
 * same chain ids, same contract addresses (same deployer, same nonces), another genesis block; the same three
 * messages are sent there, so their hashes are A's. Readiness must turn 503 naming both chains (L1 found at the
 * listener's first read of B, its head ~50 blocks back, or at the next interval; L2 at the interval); then all three
 * are anchored on B, where a running direction would find A's third message claimable and claim it (a claim on the new
 * chain from old state). Nothing may be sent on B, one error per chain logged, the metric set, A's rows kept as they
 * were. (Anchoring only after the 503 keeps the test deterministic: before detection the directions still run, see
 * docs/relayer-operations.md, "Chain pin".)
 */
const L1_ID = 59_300 + (process.pid % 100) * 2;
const L2_ID = L1_ID + 1;
const PIN_CHECK_MS = 1_000;
const accounts = devAccounts(4);
const deployerKey = accounts[0]!.privateKey;
const relayerKey = accounts[2]!.privateKey;
const relayerAddress = accounts[2]!.address;

type Pair = MessagePair;

const startPair = (genesisTimestamp: number, ports?: [number, number]) =>
  startMessagePair({ ids: [L1_ID, L2_ID], deployerKey, genesisTimestamp, ports });

/** Sends `n` fee-paying L1→L2 messages; returns their hashes in order. */
async function send(d: Pair, n: number): Promise<string[]> {
  const sender = new Wallet(accounts[1]!.privateKey, d.p1);
  const l1 = L1MessageService__factory.connect(d.l1Service, sender);
  const hashes: string[] = [];
  for (let i = 0; i < n; i++) {
    const fee = parseEther('0.01');
    const receipt = await mined(l1.sendMessage(sender.address, fee, '0x', { value: fee }));
    const log = receipt.logs.map((l) => l1.interface.parseLog(l)).find((l) => l?.name === 'MessageSent')!;
    hashes.push(
      messageHash({
        from: log.args._from as string,
        to: log.args._to as string,
        fee: log.args._fee as bigint,
        value: log.args._value as bigint,
        nonce: log.args._nonce as bigint,
        calldata: log.args._calldata as string,
      }),
    );
  }
  await d.p1.send('anvil_mine', ['0x3']);
  return hashes;
}

/** Anchors `hashes` (numbers `first`…) on L2, as the coordinator would. */
async function anchor(d: Pair, hashes: string[], first: number, rolling: string): Promise<string> {
  for (const h of hashes) rolling = nextRollingHash(rolling, h);
  const l2 = L2MessageService__factory.connect(d.l2Service, new Wallet(deployerKey, d.p2));
  await mined(l2.anchorL1L2MessageHashes(hashes, first, first + hashes.length - 1, rolling));
  return rolling;
}

const envFor = (d: Pair, db: ProcessDatabase) =>
  pairRelayerEnv(d, db, relayerKey, { RELAYER_PIN_CHECK_INTERVAL_MS: String(PIN_CHECK_MS) });

const ready = async (url: string) => {
  const res = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(10_000) });
  return {
    status: res.status,
    checks: ((await res.json()) as { checks: { name: string; ok: boolean; detail?: string }[] }).checks,
  };
};
const byHash = (rs: MessageRecord[]) =>
  Object.fromEntries(rs.map((r) => [r.messageHash, { status: r.status, history: r.history.map((h) => h.status) }]));

let testDb: Awaited<ReturnType<typeof openTestDb>>;
let db: ProcessDatabase;
let a: Pair | undefined;
let b: Pair | undefined;
let relayer: RelayerProcess | undefined;

beforeAll(async () => {
  testDb = await openTestDb();
  db = await processDatabase(testDb, 'reset');
});
afterAll(async () => {
  if (relayer?.child.exitCode === null) relayer.child.kill('SIGKILL');
  await Promise.allSettled([a?.stop(), b?.stop()]);
  await db?.drop();
  await testDb?.close();
});

describe('a chain reset under a running relayer', () => {
  it(
    'behavior: readiness 503 naming both chains within the re-check interval, one error per chain, the metric set, nothing claimed on the new chains, old rows kept',
    { timeout: 180_000 },
    async () => {
      const now = Math.floor(Date.now() / 1000);
      a = await startPair(now - 1_000);
      const hashes = await send(a, 2);
      await anchor(a, hashes, 1, '0x' + '00'.repeat(32));
      relayer = await spawnRelayer(envFor(a, db));
      const url = relayer.url;
      await until(
        'both messages claimed on A',
        async () => (await records(url).catch(() => [])).filter((r) => r.status === 'CLAIMED_SUCCESS').length === 2,
        90_000,
      );
      hashes.push(...(await send(a, 1))); // sent, never anchored on A: it waits for anchoring
      await a.p1.send('anvil_mine', ['0x32']); // A's L1 head well above what B will have: the head goes back at the reset
      const aHead = await a.p1.getBlockNumber();
      await until('the third message stored', async () => (await records(url)).length === 3, 60_000);
      // The listener has seen A's last head (one confirmation): B's heads are ~50 blocks below it.
      await until(
        `the listener at A's head ${aHead}`,
        async () => ((await metricSum(url, 'relayer_listener_last_block')) ?? 0) >= aHead - 1,
        60_000,
      );
      expect((await ready(url)).status).toBe(200);
      const before = byHash(await records(url));
      expect(before[hashes[2]!]!.status).not.toMatch(/ANCHORED|PENDING|CLAIMED/);

      const ports: [number, number] = [a.l1.port, a.l2.port];
      await a.stop();
      a = undefined;
      const resetAt = Date.now();
      b = await startPair(now, ports); // the reset: same ports, ids and addresses, another genesis
      const again = await send(b, 3);
      expect(again).toEqual(hashes);

      let detail = '';
      await until(
        'readiness 503 naming both chains',
        async () => {
          const r = await ready(url);
          detail = r.checks.find((c) => c.name === 'chainPin')?.detail ?? '';
          return r.status === 503 && detail.includes('L1 genesis') && detail.includes('L2 genesis');
        },
        60_000,
      );
      console.log(
        `chain reset: readiness 503 naming both chains ${Date.now() - resetAt} ms after the old chains stopped (RELAYER_PIN_CHECK_INTERVAL_MS ${PIN_CHECK_MS}; B's deployment and sends in between)`,
      );
      // L1 is found by whichever comes first, the listener's first read of B (its head ~50 blocks back) or the
      // interval; L2 (no listener of its own here) by the interval. The head path alone:
      // test/relayer/pin-watch.test.ts.
      const headPath = relayer.lines.some((l) => l.includes(`L1 head went back from ${aHead} to `));
      console.log(`chain reset: L1 found by ${headPath ? 'its head going back' : 'the interval check'}`);
      // Only now are A's three hashes anchored on B: the third, unfinished on A, is claimable there.
      await anchor(b, again, 1, '0x' + '00'.repeat(32));
      expect(detail).toMatch(
        /^L1 genesis block hash stored 0x[0-9a-f]{64}, now 0x[0-9a-f]{64}; L2 genesis block hash stored 0x[0-9a-f]{64}, now 0x[0-9a-f]{64}; claiming stopped on L1_TO_L2$/,
      );
      expect(await metricSum(url, 'relayer_chain_pin_mismatch')).toBe(2);

      // Three more pin checks on the relayer's own clock with B's messages anchored: a running direction would have
      // claimed.
      const pinRuns = async () =>
        Number(
          /relayer_poller_runs_total\{direction="all",poller="chain-pin"\} (\d+)/.exec(
            await (await fetch(`${url}/metrics`)).text(),
          )?.[1] ?? 0,
        );
      const start = await pinRuns();
      await until('three more pin checks', async () => (await pinRuns()) >= start + 3, 60_000);
      expect(await b.p2.getTransactionCount(relayerAddress, 'pending')).toBe(0);
      const pool = (await b.p2.send('txpool_content', [])) as {
        pending: Record<string, unknown>;
        queued: Record<string, unknown>;
      };
      expect([Object.keys(pool.pending), Object.keys(pool.queued)]).toEqual([[], []]);
      expect(byHash(await records(url))).toEqual(before);
      expect((await ready(url)).status).toBe(503);

      const errors = relayer.lines
        .filter((l) => l.startsWith('{') && (JSON.parse(l) as { level: number }).level >= 50)
        .map((l) => (JSON.parse(l) as { msg: string }).msg);
      expect(errors).toHaveLength(2);
      for (const layer of ['L1', 'L2']) {
        expect(
          errors.filter((m) => m.startsWith(`chain pin mismatch while running: ${layer} genesis block hash stored`)),
        ).toHaveLength(1);
      }
      relayer.child.kill('SIGTERM');
      expect(await within('the relayer stops', 30_000, relayer.exited)).toBe(0);
    },
  );
});
