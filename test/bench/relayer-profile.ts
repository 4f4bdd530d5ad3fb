/**
 * Helpers of the relayer benchmark (test/bench/relayer.ts): a CPU profile of this process over one phase
 * (node:inspector, the same sampler as --cpu-prof; the relayer, PGlite and the coordinator all run on this
 * thread), summarized as self time per function and per module, and the CPU time of the child processes
 * named `anvil` (the devnet's chains), to tell whether the chain or the relayer bounds claims/s.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Sampled time on CPU (not idle), ms. */
  busyMs: number;
  /** Heaviest self time: [function (file:line), ms]. */
  top: [string, number][];
  /** Self time per module (package in node_modules, or file of this project), heaviest first. */
  byModule: [string, number][];
  /**
   * Self time charged to the nearest function of src/ on the stack (what the relayer's own code causes,
   * library and native time included): [function (file:line), ms].
   */
  byProjectCaller: [string, number][];
}

const moduleOf = (url: string): string => {
  if (url === '') return '(native/vm)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return url;
  const src = url.search(/\/(src|test|generated)\//);
  return src >= 0 ? url.slice(src + 1) : url;
};

const shortUrl = (url: string): string => {
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) return url.slice(nm + '/node_modules/'.length);
  const src = url.search(/\/(src|test|generated)\//);
  return src >= 0 ? url.slice(src + 1) : url;
};

function summarize(profile: Profile, topN: number): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const nameOf = ({ functionName, url, lineNumber }: ProfileNode['callFrame']) =>
    url ? `${functionName || '(anonymous)'} ${shortUrl(url)}:${lineNumber + 1}` : functionName || '(anonymous)';
  const callerCache = new Map<number, string>();
  const projectCaller = (id: number): string => {
    const cached = callerCache.get(id);
    if (cached !== undefined) return cached;
    let at: number | undefined = id;
    let found = '(no src/ frame: timers, sockets, GC)';
    while (at !== undefined) {
      const n = byId.get(at)!;
      if (/\/src\//.test(n.callFrame.url) && !n.callFrame.url.includes('/node_modules/')) {
        found = nameOf(n.callFrame);
        break;
      }
      at = parent.get(at);
    }
    callerCache.set(id, found);
    return found;
  };
  const caller = new Map<string, number>();
  const fn = new Map<string, number>();
  const mod = new Map<string, number>();
  let busyUs = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    const us = profile.timeDeltas[i] ?? 0;
    if (!node || node.callFrame.functionName === '(idle)') return;
    busyUs += us;
    const { functionName, url } = node.callFrame;
    const name = nameOf(node.callFrame);
    fn.set(name, (fn.get(name) ?? 0) + us);
    const c = projectCaller(id);
    caller.set(c, (caller.get(c) ?? 0) + us);
    const m = url ? moduleOf(url) : functionName.startsWith('(') ? functionName : '(native/vm)';
    mod.set(m, (mod.get(m) ?? 0) + us);
  });
  const sorted = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => [k, us / 1000] as [string, number]);
  return {
    busyMs: busyUs / 1000,
    top: sorted(fn, topN),
    byModule: sorted(mod, 12),
    byProjectCaller: sorted(caller, topN),
  };
}

/**
 * Starts sampling this thread; the returned function stops and summarizes, and writes the profile to `out`
 * when given (a .cpuprofile that Chrome DevTools opens).
 */
export async function startProfile(
  intervalUs = 500,
  out?: string,
): Promise<(topN?: number) => Promise<ProfileSummary>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  await session.post('Profiler.start');
  return async (topN = 20) => {
    const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
    session.disconnect();
    if (out) writeFileSync(out, JSON.stringify(profile));
    return summarize(profile, topN);
  };
}

/** CPU ms (user + system) used so far by this process's child processes named `name`, summed. */
export function childCpuMs(name: string): number {
  const ticksPerMs = 100 / 1000; // USER_HZ is 100 on Linux
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const open = stat.indexOf('(');
    const close = stat.lastIndexOf(')');
    if (stat.slice(open + 1, close) !== name) continue;
    const f = stat.slice(close + 2).split(' ');
    // Fields after the name: state(0) ppid(1) ... utime(11) stime(12).
    if (Number(f[1]) !== process.pid) continue;
    total += (Number(f[11]) + Number(f[12])) / ticksPerMs;
  }
  return total;
}

/** The 1-minute load average, as /proc/loadavg gives it. */
export const loadavg = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
