/**
 * The rpc bench's latency probe: requests one at a time (autocannon reports whole milliseconds, too coarse for
 * a sub-millisecond hop), each side over its own kept-alive connection, the sides taking turns.
 */
import { Agent, request } from 'node:http';
import type { Target } from './_load.js';

export const PROBES = Number(process.env.BENCH_PROBE ?? 500);

/** One POST over `agent`, resolving with the microseconds until the whole answer was read. */
function timedPost(url: URL, agent: Agent, body: string): Promise<number> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          text.includes('"result"') && !text.includes('"error"')
            ? resolve(Number(process.hrtime.bigint() - started) / 1_000)
            : reject(new Error(`not a result: ${text.slice(0, 200)}`)),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Unloaded latency: PROBES requests per target, one at a time, each target over its own kept-alive connection,
 * the targets taking turns (so a slow moment of the machine hits all of them alike). p50/p99 in µs.
 */
export async function latencyProbe(targets: Target[], body: string): Promise<{ p50: number; p99: number }[]> {
  const agents = targets.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  const urls = targets.map((t) => new URL(t.url));
  const times: number[][] = targets.map(() => []);
  try {
    // A few unmeasured rounds open the connections and warm the path.
    for (let i = 0; i < 20 + PROBES; i++) {
      for (const [k] of targets.entries()) {
        const us = await timedPost(urls[k]!, agents[k]!, body);
        if (i >= 20) times[k]!.push(us);
      }
    }
  } finally {
    for (const a of agents) a.destroy();
  }
  return times.map((ts) => {
    const sorted = ts.sort((a, b) => a - b);
    return {
      p50: sorted[Math.floor(sorted.length * 0.5)]!,
      p99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!,
    };
  });
}
