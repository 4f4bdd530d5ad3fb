/**
 * `npm run bench -- relayer`: N messages each way on the devnet (default 500; BENCH_MESSAGES overrides).
 * Phase 1: the relayer claims them; latency = anchored (seen by the relayer) → claim receipt (seen by it),
 * from its own records; it starts once all its messages are claimable, as the baseline does. Phase 2, same run and devnet: another N each way claimed by a minimal sequential
 * claimer (one message at a time: send, wait for the receipt, next), measured from the moment all its
 * messages were anchored. Prints p50/p95 latency and claims/s for both, and the ratios.
 */
import { Contract, parseEther, type Wallet } from 'ethers';
import { openTestDb } from '../helpers/db.js';
import { loadRelayerConfig, startRelayer } from '../../src/relayer/index.js';
import { messageTrees } from '../../src/common/chain/messages.js';
import { L1MessageService__factory, L2MessageService__factory } from '../../generated/contracts/types/index.js';
import { relayerEnv, startRelayerDevnet, testCommon, type RelayerDevnet } from '../e2e/relayer/harness.js';

const N = Number(process.env.BENCH_MESSAGES ?? 500);
const FEE = parseEther('0.001');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

interface Sent { hash: string; nonce: bigint; block: number; from: string; to: string; fee: bigint; value: bigint; calldata: string }

/** Sends n EOA messages without waiting for each receipt; returns them with their numbers and blocks. */
async function sendMany(d: RelayerDevnet, sender: Wallet, layer: 'l1' | 'l2', n: number): Promise<Sent[]> {
  const s = d.devnet.state;
  const c = layer === 'l1' ? L1MessageService__factory.connect(s.l1.messageService, sender) : L2MessageService__factory.connect(s.l2.messageService, sender);
  let nonce = await sender.getNonce('pending');
  const to = d.wallet(12, layer).address;
  const txs = [];
  for (let i = 0; i < n; i++) txs.push(await c.sendMessage(to, FEE, '0x', { value: FEE + BigInt(i + 1), nonce: nonce++, gasLimit: 200_000n }));
  const out: Sent[] = [];
  for (const tx of txs) {
    const r = (await tx.wait())!;
    for (const log of r.logs) {
      const p = c.interface.parseLog(log);
      if (p?.name !== 'MessageSent') continue;
      out.push({ hash: String(p.args._messageHash), nonce: p.args._nonce as bigint, block: r.blockNumber, from: p.args._from as string, to: p.args._to as string, fee: p.args._fee as bigint, value: p.args._value as bigint, calldata: p.args._calldata as string });
    }
  }
  return out;
}

function report(name: string, latencies: number[], seconds: number) {
  const line = { name, claims: latencies.length, p50: pct(latencies, 50), p95: pct(latencies, 95), claimsPerSecond: latencies.length / seconds };
  console.log(`${name.padEnd(28)} claims=${line.claims} p50=${line.p50.toFixed(2)} s p95=${line.p95.toFixed(2)} s claims/s=${line.claimsPerSecond.toFixed(1)}`);
  return line;
}

async function relayerPhase(d: RelayerDevnet, db: Awaited<ReturnType<typeof openTestDb>>) {
  const common = testCommon('warn');
  const from = { l1: await d.wallet(13, 'l1').provider!.getBlockNumber(), l2: await d.wallet(13, 'l2').provider!.getBlockNumber() };
  const [l1, l2] = await Promise.all([sendMany(d, d.wallet(13, 'l1'), 'l1', N), sendMany(d, d.wallet(13, 'l2'), 'l2', N)]);
  await allAnchored(d, l1, l2);
  // Like the baseline, the relayer starts once every message is claimable: this measures claiming alone.
  const loaded = loadRelayerConfig(relayerEnv(d, { L1_LISTENER_INITIAL_FROM_BLOCK: String(from.l1), L2_LISTENER_INITIAL_FROM_BLOCK: String(from.l2) }));
  const schema = db.schema('bench_relayer');
  const relayer = await startRelayer({ common, db: db.client, config: { ...loaded, api: { ...loaded.api, port: 0 } }, schema });
  const total = l1.length + l2.length;
  const q = () => db.client.knex(`${schema}.message`);
  for (;;) {
    const [{ count }] = (await q().where('status', 'CLAIMED_SUCCESS').count({ count: '*' })) as [{ count: string }];
    if (Number(count) >= total) break;
    await sleep(500);
  }
  const rows = (await q().select('direction', 'anchored_at', 'claimed_at')) as { direction: string; anchored_at: Date; claimed_at: Date }[];
  await relayer.stop();
  const results = [];
  for (const dir of ['L1_TO_L2', 'L2_TO_L1']) {
    const rs = rows.filter((r) => r.direction === dir);
    const lat = rs.map((r) => (new Date(r.claimed_at).getTime() - new Date(r.anchored_at).getTime()) / 1000);
    const span = (Math.max(...rs.map((r) => new Date(r.claimed_at).getTime())) - Math.min(...rs.map((r) => new Date(r.anchored_at).getTime()))) / 1000;
    results.push(report(`relayer ${dir}`, lat, span));
  }
  return results;
}

async function allAnchored(d: RelayerDevnet, l1: Sent[], l2: Sent[]): Promise<void> {
  const s = d.devnet.state;
  const l2Service = L2MessageService__factory.connect(s.l2.messageService, d.wallet(15, 'l2'));
  const l1Service = L1MessageService__factory.connect(s.l1.messageService, d.wallet(15, 'l1'));
  while ((await l2Service.inboxL1L2MessageStatus(l1.at(-1)!.hash)) !== 1n) await sleep(100);
  const lastBlock = Math.max(...l2.map((m) => m.block));
  while ((await l1Service.currentL2BlockNumber()) < BigInt(lastBlock)) await sleep(100);
}

/** The baseline: claims one message at a time with the devnet's own bindings, waiting for each receipt. */
async function baselinePhase(d: RelayerDevnet) {
  const s = d.devnet.state;
  const claimerL1 = d.wallet(15, 'l1');
  const claimerL2 = d.wallet(15, 'l2');
  const [l1, l2] = await Promise.all([sendMany(d, d.wallet(14, 'l1'), 'l1', N), sendMany(d, d.wallet(14, 'l2'), 'l2', N)]);
  const l2Service = L2MessageService__factory.connect(s.l2.messageService, claimerL2);
  const l1Service = L1MessageService__factory.connect(s.l1.messageService, claimerL1);
  const results = [];

  // Wait until all are anchored (L1→L2) and finalized (L2→L1), then claim one by one.
  await allAnchored(d, l1, l2);
  let start = Date.now();
  let lat: number[] = [];
  for (const m of l1) {
    await (await l2Service.claimMessage(m.from, m.to, m.fee, m.value, claimerL2.address, m.calldata, m.nonce)).wait();
    lat.push((Date.now() - start) / 1000);
  }
  results.push(report('sequential L1_TO_L2', lat, (Date.now() - start) / 1000));

  // L2→L1: read the roots of the finalizations and build the proofs.
  const lastBlock = Math.max(...l2.map((m) => m.block));
  const rootsAdded = await l1Service.queryFilter(l1Service.filters.L2MerkleRootAdded(), 0);
  const finalized = await l1Service.queryFilter(l1Service.filters.BlocksFinalized(), 0);
  const events = new Contract(s.l2.messageService, L2MessageService__factory.abi, claimerL2.provider);
  start = Date.now();
  lat = [];
  for (const f of finalized) {
    const [first, last] = [Number(f.args.lastFinalizedBlock) + 1, Number(f.args.finalizedBlock)];
    if (last < Math.min(...l2.map((m) => m.block)) || first > lastBlock) continue;
    const logs = await events.queryFilter(events.filters.MessageSent!(), first, last);
    const hashes = logs.map((l) => events.interface.parseLog(l)!).sort((a, b) => Number((a.args._nonce as bigint) - (b.args._nonce as bigint))).map((p) => String(p.args._messageHash));
    const roots = rootsAdded.filter((r) => r.transactionHash === f.transactionHash);
    if (roots.length === 0) continue;
    const depth = Number(roots[0]!.args.treeDepth);
    const trees = messageTrees(hashes, depth);
    for (const m of l2.filter((x) => x.block >= first && x.block <= last)) {
      const i = hashes.indexOf(m.hash);
      const tree = trees[Math.floor(i / 2 ** depth)]!;
      const leaf = i % 2 ** depth;
      await (await l1Service.claimMessageWithProof({ proof: tree.proof(leaf), messageNumber: m.nonce, leafIndex: leaf, from: m.from, to: m.to, fee: m.fee, value: m.value, feeRecipient: claimerL1.address, merkleRoot: tree.root, data: m.calldata })).wait();
      lat.push((Date.now() - start) / 1000);
    }
  }
  results.push(report('sequential L2_TO_L1', lat, (Date.now() - start) / 1000));
  return results;
}

export async function main(): Promise<void> {
  const db = await openTestDb();
  const common = testCommon('warn');
  const d = await startRelayerDevnet(common, db.client, db.schema('bench_coordinator'), { blockTimeMs: 1_000 });
  try {
    console.log(`${N} messages each way, database ${db.client.kind}`);
    const relayer = await relayerPhase(d, db);
    const baseline = await baselinePhase(d);
    for (const i of [0, 1]) {
      const [r, b] = [relayer[i]!, baseline[i]!];
      console.log(`${r.name.replace('relayer ', '')}: claims/s ${(r.claimsPerSecond / b.claimsPerSecond).toFixed(1)}x the sequential claimer; p95 latency ${(r.p95 / b.p95).toFixed(2)}x`);
    }
  } finally {
    await d.stop();
    await db.close();
  }
}
