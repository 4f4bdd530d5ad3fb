import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseEther } from 'ethers';
import { openTestDb } from '../../helpers/db.js';
import { useSharedDevnet, type SharedRelayerDevnet } from './shared-devnet.js';
import {
  metricSum,
  processDatabase,
  records,
  spawnRelayer,
  until,
  type MessageRecord,
  type RelayerProcess,
} from './process.js';
import { claimCounts } from './exactly-once.js';

/**
 * Issue 18, item 10: the real `l2stack relayer` on the shared devnet with its L2 signer drained. Twenty
 * L1→L2 messages become claimable while it cannot pay; far more iterations pass than MAX_NUMBER_OF_RETRIES
 * allows submissions, yet nothing is given up: claiming pauses (readiness names it, the balance gauge shows
 * it, one log line), and once the account is refunded every message is claimed exactly once, with
 * relayer_claims_sent_total equal to the transactions the node took.
 */
const state = inject('devnet');
let testDb: Awaited<ReturnType<typeof openTestDb>>;
const cleanups: (() => Promise<unknown> | void)[] = [];

beforeAll(async () => {
  testDb = await openTestDb();
});
afterAll(async () => {
  for (const fn of cleanups.reverse()) await fn();
  await testDb?.close();
});

const COUNT = 20;
const RETRIES = 2;
const INTERVAL_MS = 200;

interface Record2 extends MessageRecord {
  retries: number;
}

async function ours(p: RelayerProcess, hashes: string[]): Promise<Record2[]> {
  const wanted = new Set(hashes);
  return ((await records(p.url).catch(() => [])) as Record2[]).filter(
    (r) => r.direction === 'L1_TO_L2' && wanted.has(r.messageHash),
  );
}

async function readiness(
  p: RelayerProcess,
): Promise<{ status: number; checks: { name: string; ok: boolean; detail?: string }[] }> {
  const res = await fetch(`${p.url}/health/ready`);
  const body = (await res.json()) as { checks: { name: string; ok: boolean; detail?: string }[] };
  return { status: res.status, checks: body.checks };
}

async function gauge(p: RelayerProcess, name: string, labels: string): Promise<number | undefined> {
  const text = await (await fetch(`${p.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('relayer with a drained signer', () => {
  it(
    'behavior: 20 claimable messages while the L2 signer has no funds: none given up, no retry used, readiness names the pause, the gauge shows 0; refunded, all 20 are claimed exactly once and claims_sent equals the accepted transactions',
    { timeout: 120_000 },
    async () => {
      const d: SharedRelayerDevnet = await useSharedDevnet(state, 'random');
      cleanups.push(() => d.destroy());
      // Drained before the relayer starts: it never had the money for a single claim.
      await d.l2.send('anvil_setBalance', [d.relayerAddress, '0x0']);
      const database = await processDatabase(testDb, 'drained');
      cleanups.push(() => database.drop());
      const p = await spawnRelayer({
        ...d.env({
          L2_L1_AUTO_CLAIM_ENABLED: 'false',
          MAX_NUMBER_OF_RETRIES: String(RETRIES),
          RETRY_DELAY_IN_SECONDS: '1',
          L2_LISTENER_INTERVAL: String(INTERVAL_MS),
        }),
        ...database.env,
      });
      cleanups.push(() => void p.child.kill('SIGKILL'));

      const hashes = await d.send('l1', COUNT);
      expect(hashes).toHaveLength(COUNT);
      await until(
        'the 20 messages to be anchored (claimable) on L2',
        async () => {
          const rows = await ours(p, hashes);
          return rows.length === COUNT && rows.every((r) => r.status === 'ANCHORED');
        },
        60_000,
      );
      let ready = await readiness(p);
      await until(
        'readiness to report the unpaid signer',
        async () => (ready = await readiness(p)).checks.some((c) => c.name === 'l2SignerBalance' && !c.ok),
        10_000,
      );
      expect(ready.status).toBe(503);
      const check = ready.checks.find((c) => c.name === 'l2SignerBalance')!;
      expect(check.detail).toMatch(
        new RegExp(
          `^signer ${d.relayerAddress} balance 0 wei cannot pay the next claim \\(needs \\d+ wei: gas limit \\d+ x max fee per gas \\d+\\)$`,
        ),
      );
      expect(ready.checks.find((c) => c.name === 'listener.L1_TO_L2')).toEqual({ name: 'listener.L1_TO_L2', ok: true });

      // Ten times MAX_NUMBER_OF_RETRIES claiming iterations (the old relayer gave every message up after two).
      const runs = async () =>
        (await gauge(p, 'relayer_poller_runs_total', 'direction="L1_TO_L2",poller="claiming"')) ?? 0;
      const from = await runs();
      await until('20 more claiming iterations', async () => (await runs()) >= from + 10 * RETRIES, 30_000);
      const waiting = await ours(p, hashes);
      expect(waiting.map((r) => [r.status, r.retries])).toEqual(hashes.map(() => ['ANCHORED', 0]));
      expect(
        await gauge(p, 'relayer_signer_balance_wei', `direction="L1_TO_L2",chain="L2",signer="${d.relayerAddress}"`),
      ).toBe(0);
      expect(await gauge(p, 'relayer_claiming_paused_funds', `direction="L1_TO_L2",signer="${d.relayerAddress}"`)).toBe(
        1,
      );
      expect((await metricSum(p.url, 'relayer_claims_sent_total')) ?? 0).toBe(0);
      expect(await d.l2.getTransactionCount(d.relayerAddress, 'pending')).toBe(0);

      await d.l2.send('anvil_setBalance', [d.relayerAddress, `0x${parseEther('10').toString(16)}`]);
      let claimed: Record2[] = [];
      await until(
        'all 20 to be claimed',
        async () =>
          (claimed = await ours(p, hashes)).length === COUNT && claimed.every((r) => r.status === 'CLAIMED_SUCCESS'),
        60_000,
      );
      // One submission each, plus one per fee bump: a loaded machine's anvil has held a claim without mining it for
      // STRANDED_CLAIM_MS (its automine stalled in CI), and the relayer rightly replaced it at the same nonce.
      let logLines: string[] = [];
      const bumpsOf = (hash: string) =>
        logLines.filter((l) => l.includes('claim fee bumped') && l.includes(hash)).length;
      // The log reaches us through a pipe: a moment for a bump's line to arrive before comparing.
      await until(
        'each extra submission to show as a logged fee bump',
        async () => {
          logLines = p.lines.join('\n').split('\n');
          return claimed.every((r) => r.retries === 1 + bumpsOf(r.messageHash));
        },
        5_000,
      ).catch(() => undefined);
      expect(claimed.map((r) => [r.messageHash, r.retries])).toEqual(
        claimed.map((r) => [r.messageHash, 1 + bumpsOf(r.messageHash)]),
      );
      expect(claimed.filter((r) => r.history.some((h) => h.status === 'NEEDS_MANUAL_INTERVENTION'))).toEqual([]);
      const counts = await claimCounts(d.l2, state.l2.messageService, hashes, d.from.l2);
      expect(hashes.map((h) => counts.get(h))).toEqual(hashes.map(() => 1));
      // The relayer's key is fresh: its L2 nonce is the number of transactions the node accepted from it.
      const accepted = await d.l2.getTransactionCount(d.relayerAddress, 'latest');
      expect(accepted).toBe(COUNT);
      expect(await metricSum(p.url, 'relayer_claims_sent_total')).toBe(accepted);
      await until('readiness to pass again', async () => (await readiness(p)).status === 200, 10_000);
      expect(await gauge(p, 'relayer_claiming_paused_funds', `direction="L1_TO_L2",signer="${d.relayerAddress}"`)).toBe(
        0,
      );

      const lines = logLines;
      expect(lines.filter((l) => l.includes('claiming paused: signer'))).toHaveLength(1);
      expect(lines.filter((l) => l.includes('claiming resumed: signer'))).toHaveLength(1);
      expect(
        lines.filter((l) => /claim broadcast failed|needs manual intervention|insufficient funds/i.test(l)),
      ).toEqual([]);
      p.child.kill('SIGTERM');
      expect(await p.exited).toBe(0);
    },
  );
});
