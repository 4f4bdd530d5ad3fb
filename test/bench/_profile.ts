/**
 * The rpc bench's CPU profile summary: the endpoint runs with --cpu-prof, and only the samples taken while a
 * measured run was going count (start-up and set-up left out).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Monotonic µs (the clock V8 stamps profile samples with, on Linux the same in every process). */
export const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** Self time per function of the .cpuprofile files in `dir`, heaviest first, and the busy (non-idle) total in µs. */
export function summarizeProfile(
  dir: string,
  windows: [number, number][],
):
  { busyUs: number; top: [string, number][]; inclusive: [string, number][]; byModule: [string, number][] } | undefined {
  // One file per process: with RPC_WORKERS every worker writes its own (they inherit --cpu-prof), summed here.
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) return undefined;
  type Profile = {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
  };
  const frameKey = (n: Profile['nodes'][number]) => {
    const where = n.callFrame.url ? n.callFrame.url.replace(/^.*\/(node_modules\/[^/]+|src)\//, '$1/') : '';
    return `${n.callFrame.functionName || '(anonymous)'} ${where}:${n.callFrame.lineNumber + 1}`;
  };
  const self = new Map<string, number>();
  // Inclusive time: each sample counts once for every distinct function on its stack.
  const inclusive = new Map<string, number>();
  const byModule = new Map<string, number>();
  let busyUs = 0;
  // Only samples taken while a measured run was going (start-up and set-up left out).
  const measured = (t: number) => windows.some(([a, b]) => t >= a && t <= b);
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    let at = profile.startTime;
    profile.samples.forEach((id, i) => {
      const n = byId.get(id)!;
      const us = profile.timeDeltas[i] ?? 0;
      at += us;
      if (!measured(at)) return;
      const fn = n.callFrame.functionName;
      if (fn === '(idle)' || fn === '(program)') return;
      busyUs += us;
      const where = n.callFrame.url ? n.callFrame.url.replace(/^.*\/(node_modules\/[^/]+|src)\//, '$1/') : '';
      const key = frameKey(n);
      self.set(key, (self.get(key) ?? 0) + us);
      const onStack = new Set<string>();
      for (let up: number | undefined = id; up !== undefined; up = parent.get(up)) onStack.add(frameKey(byId.get(up)!));
      for (const k of onStack) inclusive.set(k, (inclusive.get(k) ?? 0) + us);
      // Where the time goes by layer: node's own (http, net, streams), the kernel calls it makes, ours, libraries.
      const module =
        where === ''
          ? `native ${fn || '(anonymous)'}`
          : where.startsWith('node:')
            ? where.replace(/:\d+$/, '').replace(/^(node:internal\/[^/]+).*/, '$1')
            : where.replace(/:\d+$/, '');
      byModule.set(module, (byModule.get(module) ?? 0) + us);
    });
  }
  const top = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12);
  const inclusiveTop = [...inclusive.entries()]
    .filter(([k]) => !k.startsWith('(root)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 30);
  return {
    busyUs,
    top,
    inclusive: inclusiveTop,
    byModule: [...byModule.entries()].sort((a, b) => b[1] - a[1]).slice(0, 24),
  };
}
