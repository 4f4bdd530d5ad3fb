import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id, parseEther } from 'ethers';
import { openTestDb } from '../../helpers/db.js';
import { loadRelayerConfig } from '../../../src/relayer/config.js';
import { startRelayer, type Relayer } from '../../../src/relayer/index.js';
import type { DbClient } from '../../../src/common/db/client.js';
import { CallRecorder__factory } from '../../../generated/contracts/types/index.js';
import { recordCall, relayerEnv, sendMessage, startRelayerDevnet, testCommon, type RelayerDevnet } from './harness.js';

/**
 * The relayer on a real devnet (two anvil chains, the message services, the coordinator anchoring and
 * finalizing), both directions, two runs on one database: the second run starts from the first one's
 * resume point with other switches and filters.
 */
const FINAL = new Set([
  'CLAIMED_SUCCESS',
  'CLAIMED_REVERTED',
  'NON_EXECUTABLE',
  'ZERO_FEE',
  'EXCLUDED',
  'NEEDS_MANUAL_INTERVENTION',
]);
type Dir = 'L1_TO_L2' | 'L2_TO_L1';
interface Expectation {
  hash: string;
  direction: Dir;
  status: string;
  reason?: RegExp;
  label: string;
}
interface MessageRecordBody {
  status: string;
  failureReason: string | null;
  claimTxHash: string | null;
  history: { status: string }[];
}

let testDb: Awaited<ReturnType<typeof openTestDb>>;
let db: DbClient;
let d: RelayerDevnet;
let schema: string;
const common = testCommon();
const expectations: Expectation[] = [];
let relayer: Relayer | undefined;

async function start(overrides: Record<string, string>): Promise<Relayer> {
  const loaded = loadRelayerConfig(relayerEnv(d, overrides));
  const config = { ...loaded, api: { ...loaded.api, port: 0 } }; // a free port (the interface's API_PORT is 1..65535)
  const r = await startRelayer({
    common: { ...common, metrics: testCommon().metrics },
    db,
    config,
    schema,
    validateResponses: true,
  });
  // Ready = database and both RPCs answer and both listeners have run (their start block is fixed).
  for (let i = 0; i < 300; i++) {
    if ((await fetch(`${r.url}/health/ready`)).status === 200) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('relayer never became ready');
}

async function record(url: string, e: Pick<Expectation, 'hash' | 'direction'>): Promise<MessageRecordBody | undefined> {
  const res = await fetch(`${url}/messages/${e.hash}?direction=${e.direction}`);
  return res.status === 200 ? ((await res.json()) as MessageRecordBody) : undefined;
}

const key = (e: Pick<Expectation, 'hash' | 'direction'>) => `${e.direction}:${e.hash}`;

async function settle(url: string, batch: Expectation[]): Promise<Map<string, MessageRecordBody>> {
  const out = new Map<string, MessageRecordBody>();
  const deadline = Date.now() + 60_000;
  let last: (MessageRecordBody | undefined)[] = [];
  while (Date.now() < deadline) {
    last = await Promise.all(batch.map((e) => record(url, e)));
    last.forEach((r, i) => r && FINAL.has(r.status) && out.set(key(batch[i]!), r));
    if (out.size === batch.length) return out;
    await new Promise((res) => setTimeout(res, 200));
  }
  console.error(
    'not settled:',
    JSON.stringify(
      last.map((r, i) => [batch[i]!.label, r?.status, r?.failureReason]),
      null,
      1,
    ),
  );
  return out;
}

beforeAll(async () => {
  testDb = await openTestDb();
  db = testDb.client;
  schema = testDb.schema('relayer');
  d = await startRelayerDevnet(common, db, testDb.schema('coordinator'));
}, 180_000);

afterAll(async () => {
  await relayer?.stop();
  await d?.stop();
  await testDb?.close();
});

describe('relayer on the devnet', () => {
  const A = 10;
  const B = 11;
  const fee = parseEther('0.01');

  it(
    'behavior: run 1 claims fee and zero-fee messages in both directions and excludes by filter',
    { timeout: 120_000 },
    async () => {
      const s = d.devnet.state;
      const [a, b] = [d.wallet(A, 'l1').address.toLowerCase(), d.wallet(B, 'l1').address];
      const user = d.wallet(12, 'l1').address;
      const recordSelector = recordCall(0n).slice(0, 10);
      relayer = await start({
        L1_EVENT_FILTER_FROM_ADDRESS: a,
        L1_EVENT_FILTER_CALLDATA: `calldata.funcSignature == "${recordSelector}" and calldata.amount > 0`,
        L1_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE: 'function record(uint256 amount, bytes note)',
        L1_L2_ENABLE_RELAYER_SPONSORING: 'true',
        L2_L1_ENABLE_RELAYER_SPONSORING: 'false',
      });
      const l1A = d.wallet(A, 'l1');
      const l2A = d.wallet(A, 'l2');
      const batch: Expectation[] = [];
      const add = async (label: string, direction: Dir, status: string, send: Promise<string>, reason?: RegExp) =>
        batch.push({ label, direction, status, reason, hash: await send });
      // L1 → L2
      await add(
        'L1→L2 fee + calldata',
        'L1_TO_L2',
        'CLAIMED_SUCCESS',
        sendMessage(d, l1A, 'l1', { to: s.callRecorder.l2, fee, value: 123n, calldata: recordCall(7n, '0xbeef') }),
      );
      await add(
        'L1→L2 fee, no calldata',
        'L1_TO_L2',
        'CLAIMED_SUCCESS',
        sendMessage(d, l1A, 'l1', { to: user, fee, value: parseEther('1') }),
      );
      await add(
        'L1→L2 zero fee, sponsored',
        'L1_TO_L2',
        'CLAIMED_SUCCESS',
        sendMessage(d, l1A, 'l1', { to: user, fee: 0n, value: 5n }),
      );
      await add(
        'L1→L2 calldata filter',
        'L1_TO_L2',
        'EXCLUDED',
        sendMessage(d, l1A, 'l1', { to: s.callRecorder.l2, fee, calldata: recordCall(0n) }),
        /calldata does not match the calldata filter \(L1_EVENT_FILTER_CALLDATA\)/,
      );
      await add(
        'L1→L2 from filter',
        'L1_TO_L2',
        'EXCLUDED',
        sendMessage(d, d.wallet(B, 'l1'), 'l1', { to: user, fee }),
        new RegExp(`sender ${b.toLowerCase()} is not L1_EVENT_FILTER_FROM_ADDRESS`),
      );
      // L2 → L1
      await add(
        'L2→L1 fee + calldata',
        'L2_TO_L1',
        'CLAIMED_SUCCESS',
        sendMessage(d, l2A, 'l2', { to: s.callRecorder.l1, fee, value: 321n, calldata: recordCall(9n, '0xcafe') }),
      );
      await add(
        'L2→L1 fee, no calldata',
        'L2_TO_L1',
        'CLAIMED_SUCCESS',
        sendMessage(d, l2A, 'l2', { to: user, fee, value: parseEther('1') }),
      );
      await add(
        'L2→L1 zero fee, sponsoring off',
        'L2_TO_L1',
        'ZERO_FEE',
        sendMessage(d, l2A, 'l2', { to: user, fee: 0n, value: 5n }),
        /L2_L1_ENABLE_RELAYER_SPONSORING is false/,
      );
      expectations.push(...batch);

      const got = await settle(relayer.url, batch);
      const summary = (rs: Map<string, MessageRecordBody>) =>
        batch.map((e) => `${e.label}: ${rs.get(key(e))?.status ?? 'not final'}`);
      expect(summary(got)).toEqual(batch.map((e) => `${e.label}: ${e.status}`));
      for (const e of batch) if (e.reason) expect(got.get(key(e))!.failureReason).toMatch(e.reason);

      // The calldata ran on each receiver, from the message service, with the message's value and arguments.
      const l2Recorder = CallRecorder__factory.connect(s.callRecorder.l2, d.wallet(A, 'l2'));
      const l1Recorder = CallRecorder__factory.connect(s.callRecorder.l1, d.wallet(A, 'l1'));
      expect(await l2Recorder.callCount()).toBe(1n);
      const onL2 = await l2Recorder.calls(0);
      expect([onL2.sender.toLowerCase(), onL2.value, onL2.amount, onL2.note]).toEqual([
        s.l2.messageService.toLowerCase(),
        123n,
        7n,
        '0xbeef',
      ]);
      expect(await l1Recorder.callCount()).toBe(1n);
      const onL1 = await l1Recorder.calls(0);
      expect([onL1.sender.toLowerCase(), onL1.value, onL1.amount, onL1.note]).toEqual([
        s.l1.messageService.toLowerCase(),
        321n,
        9n,
        '0xcafe',
      ]);
    },
  );

  it('behavior: metrics count messages by status and direction and observe claim latency', async () => {
    const text = await (await fetch(`${relayer!.url}/metrics`)).text();
    expect(text).toMatch(/relayer_messages\{direction="L1_TO_L2",status="CLAIMED_SUCCESS"\} 3/);
    expect(text).toMatch(/relayer_messages\{direction="L2_TO_L1",status="ZERO_FEE"\} 1/);
    expect(text).toMatch(/relayer_claim_latency_seconds_count\{direction="L2_TO_L1"\} 2/);
    expect(text).toMatch(/relayer_listener_lag_blocks\{direction="L1_TO_L2"\} \d+/);
  });

  it(
    'behavior: run 2 resumes from the database without duplicates and applies the new switches',
    { timeout: 120_000 },
    async () => {
      await relayer!.stop();
      relayer = undefined;
      const s = d.devnet.state;
      const a = d.wallet(A, 'l1').address.toLowerCase();
      const user = d.wallet(12, 'l1').address;
      const l1A = d.wallet(A, 'l1');
      const l2A = d.wallet(A, 'l2');
      // Sent while no relayer runs: found by resuming from the stored cursor.
      const batch: Expectation[] = [];
      const add = async (label: string, direction: Dir, status: string, send: Promise<string>, reason?: RegExp) =>
        batch.push({ label, direction, status, reason, hash: await send });
      await add(
        'L1→L2 calldata switch off',
        'L1_TO_L2',
        'EXCLUDED',
        sendMessage(d, l1A, 'l1', { to: s.callRecorder.l2, fee, calldata: recordCall(3n) }),
        /L1_L2_CALLDATA_ENABLED is false/,
      );
      await add(
        'L1→L2 fee, no calldata (run 2)',
        'L1_TO_L2',
        'CLAIMED_SUCCESS',
        sendMessage(d, l1A, 'l1', { to: user, fee }),
      );
      await add(
        'L1→L2 zero fee, sponsoring off',
        'L1_TO_L2',
        'ZERO_FEE',
        sendMessage(d, l1A, 'l1', { to: user, fee: 0n }),
        /L1_L2_ENABLE_RELAYER_SPONSORING is false/,
      );
      await add(
        'L2→L1 EOA switch off',
        'L2_TO_L1',
        'EXCLUDED',
        sendMessage(d, l2A, 'l2', { to: s.callRecorder.l1, fee }),
        /L2_L1_EOA_ENABLED is false/,
      );
      await add(
        'L2→L1 to filter',
        'L2_TO_L1',
        'EXCLUDED',
        sendMessage(d, l2A, 'l2', { to: user, fee, calldata: '0x12345678' }),
        /is not L2_EVENT_FILTER_TO_ADDRESS/,
      );
      await add(
        'L2→L1 zero fee + calldata, sponsored',
        'L2_TO_L1',
        'CLAIMED_SUCCESS',
        sendMessage(d, l2A, 'l2', { to: s.callRecorder.l1, fee: 0n, calldata: recordCall(5n) }),
      );
      relayer = await start({
        L1_EVENT_FILTER_FROM_ADDRESS: a,
        L1_L2_CALLDATA_ENABLED: 'false',
        L2_L1_EOA_ENABLED: 'false',
        L2_EVENT_FILTER_TO_ADDRESS: s.callRecorder.l1.toLowerCase(),
        L1_L2_ENABLE_RELAYER_SPONSORING: 'false',
        L2_L1_ENABLE_RELAYER_SPONSORING: 'true',
      });
      const got = await settle(relayer.url, batch);
      expect(batch.map((e) => `${e.label}: ${got.get(key(e))?.status ?? 'not final'}`)).toEqual(
        batch.map((e) => `${e.label}: ${e.status}`),
      );
      for (const e of batch) if (e.reason) expect(got.get(key(e))!.failureReason).toMatch(e.reason);
      expectations.push(...batch);

      // Run 1's messages are untouched: same status, one history entry per status.
      for (const e of expectations.slice(0, 8)) {
        const r = (await record(relayer.url, e))!;
        expect(r.status).toBe(e.status);
        expect(new Set(r.history.map((h) => h.status)).size).toBe(r.history.length);
      }
      const page = (await (await fetch(`${relayer.url}/messages?limit=100`)).json()) as {
        meta: { totalItemsCount: number };
      };
      expect(page.meta.totalItemsCount).toBe(expectations.length);
    },
  );

  it('behavior: no message is claimed twice; each claimed message has exactly one claim transaction', async () => {
    const s = d.devnet.state;
    for (const [layer, address] of [
      ['l1', s.l1.messageService],
      ['l2', s.l2.messageService],
    ] as const) {
      const provider = d.wallet(A, layer).provider!;
      const logs = await provider.getLogs({ address, topics: [id('MessageClaimed(bytes32)')], fromBlock: 0 });
      const hashes = logs.map((l) => l.topics[1]);
      expect(new Set(hashes).size).toBe(hashes.length);
    }
    for (const e of expectations.filter((x) => x.status === 'CLAIMED_SUCCESS')) {
      const r = (await record(relayer!.url, e))!;
      expect(r.history.filter((h) => h.status === 'PENDING')).toHaveLength(1);
      expect(r.claimTxHash).toMatch(/^0x[0-9a-f]{64}$/);
    }
  });

  it('error: a hash stored in both directions needs ?direction= (409)', async () => {
    // Same sender, receiver, fee, value, calldata and number on both chains: the same hash (the spec's case).
    const l1 = expectations.find((e) => e.label === 'L1→L2 fee, no calldata')!;
    const l2 = expectations.find((e) => e.label === 'L2→L1 fee, no calldata')!;
    expect(l1.hash).toBe(l2.hash);
    const res = await fetch(`${relayer!.url}/messages/${l1.hash.toUpperCase().replace('0X', '0x')}`);
    expect(res.status).toBe(409);
    expect(((await res.json()) as { detail: string }).detail).toBe(
      `Message ${l1.hash} exists in both directions; add ?direction=L1_TO_L2 or ?direction=L2_TO_L1`,
    );
    expect((await record(relayer!.url, l2))!.status).toBe('CLAIMED_SUCCESS');
  });

  it('error: the API answers 404 for an unknown hash and 400 for a bad one', async () => {
    const unknown = `0x${'ab'.repeat(32)}`;
    const res = await fetch(`${relayer!.url}/messages/${unknown}`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { detail: string }).detail).toBe(`No message with hash ${unknown}`);
    expect((await fetch(`${relayer!.url}/messages/0x12`)).status).toBe(400);
    expect((await fetch(`${relayer!.url}/messages?status=DONE`)).status).toBe(400);
  });
});
