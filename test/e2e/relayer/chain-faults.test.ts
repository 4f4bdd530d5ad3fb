import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id, parseEther, parseUnits, type JsonRpcProvider } from 'ethers';
import { openTestDb } from '../../helpers/db.js';
import { ROLES } from '../../../src/devnet/accounts.js';
import { L1MessageService__factory, L2MessageService__factory } from '../../../generated/contracts/types/index.js';
import { relayerEnv, sendMessage, startRelayerDevnet, testCommon, type RelayerDevnet } from './harness.js';
import { processDatabase, spawnRelayer, until, type ProcessDatabase, type RelayerProcess } from './process.js';
import { claimCounts, deadPendingClaims, pendingFromApi, pendingFromDatabase, type Direction } from './exactly-once.js';
import { startMiner, type Layer, type Miner } from './miner.js';

/**
 * Chain faults around the real `l2stack relayer` process, on a devnet whose block production the test
 * controls (startMiner): SIGTERM while claims wait in the pool, a base-fee spike above the cap, and reorgs
 * on each chain before and after the relayer's confirmations. The relayer listens with 3 confirmations on
 * L1 and 2 on L2; the coordinator anchors L1 messages after 4, so an L1 reorg of depth 4 can remove a
 * message the relayer stored but L2 never anchored.
 */
const common = testCommon();
const gwei = (n: number) => parseUnits(String(n), 'gwei');
const CAP = gwei(10);
let testDb: Awaited<ReturnType<typeof openTestDb>>;
let d: RelayerDevnet;
let miner: Miner;
let database: ProcessDatabase;
let env: Record<string, string>;
let p: RelayerProcess | undefined;
let chains: Record<Layer, JsonRpcProvider>;
let normalBaseFee: bigint;
const output: string[] = [];

beforeAll(async () => {
  testDb = await openTestDb();
  // The devnet's own ticker never fires (1 h): the miner below decides when blocks come.
  d = await startRelayerDevnet(common, testDb.client, testDb.schema('coordinator'), {
    blockTimeMs: 3_600_000,
    coordinatorL1Confirmations: 4,
  });
  const s = d.devnet.state;
  miner = startMiner({ l1: s.l1.rpcUrl, l2: s.l2.rpcUrl });
  chains = { l1: d.wallet(10, 'l1').provider as JsonRpcProvider, l2: d.wallet(10, 'l2').provider as JsonRpcProvider };
  normalBaseFee = (await chains.l1.getBlock('latest'))!.baseFeePerGas!;
  database = await processDatabase(testDb, 'chain');
  env = {
    ...relayerEnv(d, {
      L1_LISTENER_BLOCK_CONFIRMATION: '3',
      L2_LISTENER_BLOCK_CONFIRMATION: '2',
      L1_LISTENER_INITIAL_FROM_BLOCK: String(await chains.l1.getBlockNumber()),
      L2_LISTENER_INITIAL_FROM_BLOCK: String(await chains.l2.getBlockNumber()),
      L2_MESSAGE_TREE_DEPTH: String(s.messageTreeDepth),
      L1_MAX_GAS_FEE_ENFORCED: 'true',
      MAX_FEE_PER_GAS_CAP: CAP.toString(),
      RETRY_DELAY_IN_SECONDS: '1',
    }),
    ...database.env,
  };
}, 180_000);

afterAll(async () => {
  p?.child.kill('SIGKILL');
  // Whatever a failed test left, chains mine normally again, so the coordinator's last transaction can be
  // mined and it stops (it waits for that receipt).
  await miner?.endSpike('l1', normalBaseFee).catch(() => undefined);
  for (const layer of ['l1', 'l2'] as const) {
    await miner?.set(layer, 'ticking').catch(() => undefined);
    await miner?.mine(layer).catch(() => undefined);
  }
  await miner?.stop();
  await d?.stop();
  await database?.drop();
  await testDb?.close();
});

// --- helpers ---------------------------------------------------------------------------------------------

let value = 1n;
/** A fee-paying message from account 10 on `layer`; each has its own value, so hashes never repeat. */
const send = (layer: Layer) =>
  sendMessage(d, d.wallet(10, layer), layer, {
    to: d.wallet(12, layer).address,
    fee: parseEther('0.01'),
    value: value++,
  });
const dirOf = (layer: Layer): Direction => (layer === 'l1' ? 'L1_TO_L2' : 'L2_TO_L1');
const destinationOf = (layer: Layer): Layer => (layer === 'l1' ? 'l2' : 'l1');

interface MessageView {
  status: string;
  failureReason: string | null;
  claimTxHash: string | null;
  history: { status: string }[];
}
async function record(layer: Layer, hash: string): Promise<MessageView | undefined> {
  const res = await fetch(`${p!.url}/messages/${hash}?direction=${dirOf(layer)}`).catch(() => undefined);
  return res?.status === 200 ? ((await res.json()) as MessageView) : undefined;
}
const statusOf = async (layer: Layer, hash: string) => (await record(layer, hash))?.status;

async function waitStatus(layer: Layer, hashes: string[], status: string, timeoutMs = 60_000): Promise<void> {
  let seen: (string | undefined)[] = [];
  await until(
    `${hashes.length} ${dirOf(layer)} message(s) ${status}`,
    async () => {
      seen = await Promise.all(hashes.map((h) => statusOf(layer, h)));
      return seen.every((s) => s === status);
    },
    timeoutMs,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; last seen: ${seen.join(', ')}`);
  });
}

/** The block holding the MessageSent of `hash` on `layer`. */
async function blockOf(layer: Layer, hash: string): Promise<number> {
  const s = d.devnet.state;
  const address = layer === 'l1' ? s.l1.messageService : s.l2.messageService;
  const [log] = await chains[layer].getLogs({
    address,
    topics: [id('MessageSent(address,address,uint256,uint256,uint256,bytes,bytes32)'), null, null, hash],
    fromBlock: 0,
  });
  return log!.blockNumber;
}

/** Whether a transaction of the coordinator waits in the L1 pool (L1 frozen: it then waits for its receipt). */
async function coordinatorPending(): Promise<boolean> {
  const coordinator = d.devnet.state.accounts[ROLES.coordinator]!.address;
  return (
    (await chains.l1.getTransactionCount(coordinator, 'pending')) >
    (await chains.l1.getTransactionCount(coordinator, 'latest'))
  );
}

/** Transactions the relayer's key has sent on `layer` (pool included). */
const relayerTxCount = (layer: Layer) => chains[layer].getTransactionCount(d.relayerAddress, 'pending');

/** One MessageClaimed event per hash in `claimed`, none for the others; no PENDING row without a live transaction. */
async function expectClaims(layer: Layer, claimed: string[], never: string[] = []): Promise<void> {
  const s = d.devnet.state;
  const contract = layer === 'l1' ? s.l2.messageService : s.l1.messageService;
  const counts = await claimCounts(chains[destinationOf(layer)], contract, [...claimed, ...never]);
  expect([...claimed, ...never].map((h) => counts.get(h))).toEqual([...claimed.map(() => 1), ...never.map(() => 0)]);
  expect(await deadPendingClaims(await pendingFromApi(p!.url), chains)).toEqual([]);
}

const pendings = (r: MessageView | undefined) => r?.history.filter((h) => h.status === 'PENDING').length;

async function listenerBlock(direction: Direction): Promise<number> {
  const text = await (await fetch(`${p!.url}/metrics`)).text();
  const m = text.match(new RegExp(`relayer_listener_last_block\\{direction="${direction}"\\} (\\d+)`));
  return m ? Number(m[1]) : -1;
}

// --- tests -----------------------------------------------------------------------------------------------

describe('relayer process under chain faults (own devnet)', () => {
  it(
    'behavior: SIGTERM while claims wait in the pool: the relayer drains, logs it and exits 0; the claims stay PENDING with live transactions and the restarted relayer finishes them, each claimed exactly once with its first transaction',
    { timeout: 120_000 },
    async () => {
      const sent = { l1: [await send('l1'), await send('l1')], l2: [await send('l2'), await send('l2')] };
      const l2Head = await chains.l2.getBlockNumber();
      const l2Service = L2MessageService__factory.connect(d.devnet.state.l2.messageService, chains.l2);
      const l1Service = L1MessageService__factory.connect(d.devnet.state.l1.messageService, chains.l1);
      await until(
        'the coordinator to anchor the L1 messages and finalize the L2 ones',
        async () =>
          (await Promise.all(sent.l1.map((h) => l2Service.inboxL1L2MessageStatus(h)))).every((x) => x === 1n) &&
          (await l1Service.currentL2BlockNumber()) >= BigInt(l2Head),
      );
      // Deep enough for the relayer's confirmations, then nothing is mined. On L1 that counts from the finalization
      // the wait above saw, which may be the head itself: 2 blocks left it 1 short of L1's 3 whenever the ticker had
      // not mined since (seen under load: the L2→L1 messages stayed SENT, L1 frozen, every later test failing).
      await miner.mine('l1', 4);
      await miner.mine('l2', 3);
      await miner.set('l1', 'frozen');
      await miner.set('l2', 'frozen');

      p = await spawnRelayer(env, output);
      await waitStatus('l1', sent.l1, 'PENDING');
      await waitStatus('l2', sent.l2, 'PENDING');
      const inFlight = await pendingFromApi(p.url);
      expect(inFlight).toHaveLength(4);
      // A claim is stored PENDING with its signed transaction just before it is broadcast: allow that moment.
      await until(
        'every PENDING claim to reach the node',
        async () => (await deadPendingClaims(inFlight, chains)).length === 0,
        15_000,
      );
      expect(await deadPendingClaims(inFlight, chains)).toEqual([]);

      const first = p;
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      expect(
        first.lines.filter((l) => l.includes('direction drained: 2 claim(s) in flight stay PENDING')),
      ).toHaveLength(2);
      expect(first.lines.some((l) => l.includes('relayer stopped'))).toBe(true);
      // What the stopped relayer left: the same four claims, PENDING, each with a transaction the node holds.
      const left = await pendingFromDatabase(database.env);
      expect(left.map((r) => r.claimTxHash).sort()).toEqual(inFlight.map((r) => r.claimTxHash).sort());
      expect(await deadPendingClaims(left, chains)).toEqual([]);

      p = await spawnRelayer(env, output);
      await miner.set('l1', 'ticking');
      await miner.set('l2', 'ticking');
      await waitStatus('l1', sent.l1, 'CLAIMED_SUCCESS');
      await waitStatus('l2', sent.l2, 'CLAIMED_SUCCESS');
      for (const layer of ['l1', 'l2'] as const) {
        for (const h of sent[layer]) {
          const r = await record(layer, h);
          expect(pendings(r)).toBe(1);
          expect(inFlight.map((x) => x.claimTxHash)).toContain(r!.claimTxHash);
        }
        await expectClaims(layer, sent[layer]);
      }
    },
  );

  it(
    'behavior: an L1 base fee above MAX_FEE_PER_GAS_CAP with L1_MAX_GAS_FEE_ENFORCED: no claim transaction is sent while it lasts; once it falls each message is claimed once',
    { timeout: 90_000 },
    async () => {
      // The coordinator's finalization of the messages is mined just before the spike: a transaction it
      // priced before the spike could not be mined during it, and the messages would never become claimable.
      await miner.set('l1', 'frozen');
      await until('a finalization to wait in the L1 pool', coordinatorPending);
      const before = await relayerTxCount('l1');
      const sent = [await send('l2'), await send('l2')];
      await miner.mine('l1'); // the waiting finalization was built before the messages; the next one covers them
      await until('the finalization of the messages to wait in the L1 pool', coordinatorPending);
      await miner.mine('l1');
      await miner.spike('l1', gwei(100));
      try {
        await waitStatus('l2', sent, 'FEE_UNDERPRICED');
        expect((await chains.l1.getBlock('latest'))!.baseFeePerGas).toBe(gwei(100));
        for (const h of sent)
          expect((await record('l2', h))!.failureReason).toMatch(
            /above MAX_FEE_PER_GAS_CAP 10000000000 \(L1_MAX_GAS_FEE_ENFORCED\)/,
          );
        // Re-evaluated every RETRY_DELAY_IN_SECONDS (1 s) while the spike lasts, and still nothing is sent.
        await new Promise((r) => setTimeout(r, 2_500));
        expect(await Promise.all(sent.map((h) => statusOf('l2', h)))).toEqual(['FEE_UNDERPRICED', 'FEE_UNDERPRICED']);
        expect(await relayerTxCount('l1')).toBe(before);
      } finally {
        await miner.endSpike('l1', normalBaseFee);
      }
      await waitStatus('l2', sent, 'CLAIMED_SUCCESS');
      expect(await relayerTxCount('l1')).toBe(before + 2);
      for (const h of sent) expect(pendings(await record('l2', h))).toBe(1);
      await expectClaims('l2', sent);
    },
  );

  it(
    'behavior: L1 reorgs: a message removed before L1_LISTENER_BLOCK_CONFIRMATION confirmations is never stored; one removed after them (L2 never anchored it) becomes NON_EXECUTABLE with the reason, no transaction; the message that reuses their number is claimed once',
    { timeout: 90_000 },
    async () => {
      // L2 frozen: the coordinator has nothing to finalize, so no transaction of its lands in the L1 blocks
      // reorganised below (it would wait forever for a receipt that cannot come).
      await miner.set('l2', 'frozen');
      await miner.set('l1', 'txs-only');
      const coordinator = d.devnet.state.accounts[ROLES.coordinator]!.address;
      const l1Service = L1MessageService__factory.connect(d.devnet.state.l1.messageService, chains.l1);
      await until(
        'the coordinator to be idle',
        async () =>
          (await l1Service.currentL2BlockNumber()) === BigInt(await chains.l2.getBlockNumber()) &&
          (await chains.l1.getTransactionCount(coordinator, 'pending')) ===
            (await chains.l1.getTransactionCount(coordinator, 'latest')),
      );
      const before = await relayerTxCount('l2');

      // (a) Two confirmations of the three the relayer waits for, held for a while, then gone.
      const early = await send('l1');
      const earlyBlock = await blockOf('l1', early);
      await miner.mine('l1', 2);
      await until(
        'the L1 listener to reach the block before it',
        async () => (await listenerBlock('L1_TO_L2')) >= earlyBlock - 1,
      );
      await new Promise((r) => setTimeout(r, 1_000));
      expect(await record('l1', early)).toBeUndefined();
      await miner.rpc('l1', 'anvil_reorg', [3, []]);

      // (b) Three confirmations: the relayer stores it; the coordinator (four) has not anchored it yet.
      const late = await send('l1');
      await miner.mine('l1', 3);
      await until('the relayer to store the message', async () => (await record('l1', late)) !== undefined);
      await miner.rpc('l1', 'anvil_reorg', [4, []]);
      const l1Logs = await chains.l1.getLogs({
        address: d.devnet.state.l1.messageService,
        fromBlock: earlyBlock,
        toBlock: 'latest',
      });
      expect(l1Logs).toEqual([]); // both messages are gone from L1

      await miner.set('l1', 'ticking');
      await miner.set('l2', 'ticking');
      const next = await send('l1');
      await waitStatus('l1', [next], 'CLAIMED_SUCCESS');
      await waitStatus('l1', [late], 'NON_EXECUTABLE');
      const r = (await record('l1', late))!;
      expect(r.failureReason).toMatch(
        /^L2 has not anchored the message; its MessageSent \(transaction 0x[0-9a-f]{64}, block \d+\) is no longer in the L1 chain: a reorg deeper than L1_LISTENER_BLOCK_CONFIRMATION removed it, so it is never claimed$/,
      );
      expect(pendings(r)).toBe(0);
      expect(await record('l1', early)).toBeUndefined();
      expect(await relayerTxCount('l2')).toBe(before + 1);
      await expectClaims('l1', [next], [early, late]);
    },
  );

  it(
    'behavior: an L2 reorg after L2_LISTENER_BLOCK_CONFIRMATION confirmations, before L1 finalized the block: the message becomes NON_EXECUTABLE with the reason, no transaction; the next message is claimed once',
    { timeout: 90_000 },
    async () => {
      // L1 frozen once the coordinator's next finalization waits in its pool: it was built before the message existed.
      await miner.set('l1', 'frozen');
      await until('a finalization to wait in the L1 pool', coordinatorPending);
      const before = await relayerTxCount('l1');

      const gone = await send('l2');
      const goneBlock = await blockOf('l2', gone);
      await until('the relayer to store the message', async () => (await record('l2', gone)) !== undefined);
      await miner.set('l2', 'txs-only');
      await miner.rpc('l2', 'anvil_reorg', [(await chains.l2.getBlockNumber()) - goneBlock + 1, []]);
      expect(
        await chains.l2.getLogs({ address: d.devnet.state.l2.messageService, fromBlock: goneBlock, toBlock: 'latest' }),
      ).toEqual([]);

      await miner.set('l2', 'ticking');
      await miner.set('l1', 'ticking');
      const next = await send('l2');
      await waitStatus('l2', [next], 'CLAIMED_SUCCESS');
      await waitStatus('l2', [gone], 'NON_EXECUTABLE');
      const r = (await record('l2', gone))!;
      expect(r.failureReason).toMatch(
        /^block \d+ is finalized by 0x[0-9a-f]{64} without the message; its MessageSent \(transaction 0x[0-9a-f]{64}, block \d+\) is no longer in the L2 chain: a reorg deeper than L2_LISTENER_BLOCK_CONFIRMATION removed it, so it is never claimed$/,
      );
      expect(pendings(r)).toBe(0);
      expect(await relayerTxCount('l1')).toBe(before + 1);
      await expectClaims('l2', [next], [gone]);

      const last = p!;
      last.child.kill('SIGTERM');
      expect(await last.exited).toBe(0);
    },
  );
});
