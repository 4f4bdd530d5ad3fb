/**
 * `npm run bench -- keccak`: our keccak256 (src/common/eth/keccak.ts) against @noble/hashes' keccak_256 on the
 * state tree's workload. Two measures, the sides taking turns in each round so the machine's load hits both:
 *
 * - replay: builds a tree (BENCH_KECCAK_LEAVES, default 20,000 random leaves, 1,000 per block, in memory)
 *   once while recording every input the tree hashes (64 B nodes and root nodes, 128 B leaf openings, 32 B
 *   values), then hashes that exact list with each implementation: ns per hash and the ratio.
 * - build: the same tree built end to end on the in-memory store with each implementation as its
 *   HashProvider: leaves/s and the ratio (the share of hashing in a build).
 *
 * Every implementation must give the same digests (checked on the recorded inputs) and the same root.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { keccak_256 } from '@noble/hashes/sha3';
import { keccak256 as ours } from '../../src/common/eth/keccak.js';
import { toHex } from '../../src/state/bytes.js';
import { treeConstants } from '../../src/state/encoding.js';
import { keccakProvider } from '../../src/state/hash.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { applyChanges, type KeyChange } from '../../src/state/tree.js';

const LEAVES = Number(process.env.BENCH_KECCAK_LEAVES ?? 20_000);
const PER_BLOCK = 1_000;
const ROUNDS = Number(process.env.BENCH_KECCAK_ROUNDS ?? 5);
const TREE = '0x00000000000000000000000000000000000000be';

type Hash = (data: Uint8Array) => Uint8Array;
const sides: { name: string; hash: Hash }[] = [
  { name: 'ours (src/common/eth/keccak.ts)', hash: ours },
  { name: '@noble/hashes keccak_256', hash: keccak_256 },
];

const keys = Array.from({ length: LEAVES }, () => toHex(randomBytes(32)));
const values = Array.from({ length: LEAVES }, () => new Uint8Array(randomBytes(32)));

/** Builds the tree with `hash`; returns the root and the seconds it took. */
async function build(hash: Hash): Promise<{ root: string; seconds: number }> {
  const c = treeConstants(keccakProvider(hash));
  const store = new MemoryStore();
  const started = performance.now();
  let root = '';
  let block = 0n;
  for (let i = 0; i < LEAVES; i += PER_BLOCK, block++) {
    const changes: KeyChange[] = [];
    for (let j = i; j < Math.min(i + PER_BLOCK, LEAVES); j++)
      changes.push({ hKey: keys[j]!, value: values[j]!, hValue: hash(values[j]!) });
    const update = await store.read(block === 0n ? 0n : block - 1n, (r) => applyChanges(c, r, TREE, changes));
    root = toHex(update.root);
    await store.commit(
      { number: block, hash: `0x${block.toString(16)}`, parentHash: '0x', root },
      new Map([[TREE, update.writes]]),
    );
  }
  return { root, seconds: (performance.now() - started) / 1000 };
}

/** Every input a build hashes, in order (copied: the tree may reuse its buffers). */
async function recordInputs(): Promise<Uint8Array[]> {
  const inputs: Uint8Array[] = [];
  await build((data) => {
    inputs.push(data.slice());
    return ours(data);
  });
  return inputs;
}

function replaySeconds(hash: Hash, inputs: readonly Uint8Array[]): number {
  const started = performance.now();
  for (const input of inputs) hash(input);
  return (performance.now() - started) / 1000;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function main(): Promise<void> {
  process.stdout.write(
    `machine load (1/5/15 min): ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  const inputs = await recordInputs();
  const sizes = new Map<number, number>();
  for (const input of inputs) sizes.set(input.length, (sizes.get(input.length) ?? 0) + 1);
  process.stdout.write(
    `tree of ${LEAVES} leaves: ${inputs.length} hashes (${[...sizes].map(([size, n]) => `${n} of ${size} B`).join(', ')})\n`,
  );
  for (const input of inputs.slice(0, 2_000)) {
    if (toHex(keccak_256(input)) !== toHex(ours(input))) throw new Error(`the two keccaks differ on ${toHex(input)}`);
  }

  const replay = sides.map(() => [] as number[]);
  const builds = sides.map(() => [] as number[]);
  const roots = new Set<string>();
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate who goes first, so neither side always runs on a cold (or warm) machine.
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) replay[i]!.push(replaySeconds(sides[i]!.hash, inputs));
    for (const i of order) {
      const b = await build(sides[i]!.hash);
      builds[i]!.push(b.seconds);
      roots.add(b.root);
    }
  }
  if (roots.size !== 1) throw new Error(`the builds disagree on the root: ${[...roots].join(', ')}`);

  process.stdout.write(
    `median of ${ROUNDS} rounds each\nside                                  ns/hash (replay)   tree leaves/s\n`,
  );
  sides.forEach((side, i) => {
    const ns = (median(replay[i]!) * 1e9) / inputs.length;
    const lps = LEAVES / median(builds[i]!);
    process.stdout.write(
      `${side.name.padEnd(36)} ${ns.toFixed(0).padStart(16)} ${Math.round(lps).toString().padStart(15)}\n`,
    );
  });
  const hashRatio = median(replay[1]!) / median(replay[0]!);
  const buildRatio = median(builds[1]!) / median(builds[0]!);
  process.stdout.write(
    `ours vs @noble/hashes: ${hashRatio.toFixed(2)}x on the tree's hashes, ${buildRatio.toFixed(2)}x on the whole build (>1 = ours faster)\n`,
  );
  process.stdout.write(
    `machine load after (1/5/15 min): ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
}
