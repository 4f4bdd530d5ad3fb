import { pooledRpc } from '../common/chain/pool.js';
import { within } from '../common/concurrency.js';
import { redactUrl } from '../common/config/env.js';
import type { Check } from '../common/http/operator.js';

/**
 * /health/ready of the token API: ready only when every dependency needed to answer correctly works —
 * the database (every read), the node (the indexer and the supply job read it), and the indexer and the
 * supply job themselves making progress. A frozen node used to leave the API "ready" while its figures
 * went stale; now each check is bounded in time and a failing one is named in the 503.
 */

export interface IndexerHealth {
  state: 'starting' | 'standing by' | 'running' | 'stopped';
  /** When the last iteration reached the head (epoch ms). */
  lastProgressAt: number | undefined;
}

export interface ReadinessOptions {
  pingDatabase: () => Promise<void>;
  /** The node of the indexer and the supply job, when either runs. */
  rpcUrl: string | undefined;
  timeoutMs: number;
  /** How long the indexer or the supply job may go without progress. */
  maxStallMs: number;
  indexer: (() => IndexerHealth) | undefined;
  /** The read model: whether its last load from the database failed (it keeps serving the version it has). */
  readModel?: () => { loadedAt: number | undefined; failing: string | undefined };
  /** Undefined when no supply job runs; else when its last snapshot was taken (epoch ms), if ever. */
  supply: { lastUpdatedAt: () => number | undefined; intervalMs: number } | undefined;
}

export interface ReadinessReport {
  ready: boolean;
  /**
   * One entry per dependency, in a fixed order; `detail` is a state that is fine ("not configured",
   * "standing by") or why it failed, absent when the check is simply ok.
   */
  checks: Check[];
  /** The failing checks, "name: why", for the problem's detail. */
  failing: string[];
}

async function probeNode(url: string, timeoutMs: number): Promise<void> {
  const what = `eth_blockNumber on ${redactUrl(url)}`;
  try {
    const result = await pooledRpc<unknown>(url, 'eth_blockNumber', [], timeoutMs);
    if (typeof result !== 'string') throw new Error(`answered ${JSON.stringify(result)?.slice(0, 60)}`);
  } catch (err) {
    const message = (err as Error).message;
    throw new Error(
      message.startsWith('no answer within')
        ? `${what} did not answer within ${timeoutMs} ms`
        : `${what} failed: ${message}`,
    );
  }
}

const age = (since: number) => `${Math.round((Date.now() - since) / 1000)} s`;

/**
 * Returns the readiness probe. Results are shared for one second (and concurrent calls share one probe),
 * so a client hammering /health/ready cannot turn it into load on the database or the node.
 */
export function createReadiness(options: ReadinessOptions): () => Promise<ReadinessReport> {
  const startedAt = Date.now();
  let inflight: Promise<ReadinessReport> | undefined;
  let last: { at: number; report: ReadinessReport } | undefined;

  const run = async (): Promise<ReadinessReport> => {
    // Keys first, so the answer lists the checks in a fixed order whichever probe settles first.
    const checks: Record<string, string> = { database: '', node: '' };
    const settle = async (name: string, fn: () => Promise<void>) => {
      try {
        await fn();
        checks[name] = 'ok';
      } catch (err) {
        checks[name] = (err as Error).message;
      }
    };
    await Promise.all([
      settle('database', () => within(options.pingDatabase(), options.timeoutMs, 'the database')),
      options.rpcUrl === undefined
        ? Promise.resolve(void (checks.node = 'not configured'))
        : settle('node', () => probeNode(options.rpcUrl!, options.timeoutMs)),
    ]);

    if (options.indexer) {
      const h = options.indexer();
      if (h.state === 'standing by')
        checks.indexer = 'standing by'; // another replica indexes; this one serves
      else if (h.lastProgressAt !== undefined && Date.now() - h.lastProgressAt <= options.maxStallMs)
        checks.indexer = 'ok';
      else if (h.lastProgressAt === undefined && Date.now() - startedAt <= options.maxStallMs)
        checks.indexer = 'starting';
      else
        checks.indexer =
          h.lastProgressAt === undefined
            ? `not synced since start ${age(startedAt)} ago`
            : `no progress for ${age(h.lastProgressAt)}`;
    } else checks.indexer = 'not configured';
    if (options.supply) {
      const at = options.supply.lastUpdatedAt();
      const allowed = options.maxStallMs + options.supply.intervalMs;
      if (at !== undefined && Date.now() - at <= allowed) checks.supply = 'ok';
      else if (at === undefined && Date.now() - startedAt <= options.maxStallMs) checks.supply = 'pending';
      else
        checks.supply =
          at === undefined ? `no supply computed since start ${age(startedAt)} ago` : `last computed ${age(at)} ago`;
    } else checks.supply = 'not configured';
    if (options.readModel) {
      const m = options.readModel();
      // Lagging is what matters: one failed load while the database blips is retried at the next change or poll.
      if (m.failing === undefined) checks.readModel = 'ok';
      else
        checks.readModel = `last load failed: ${m.failing}${m.loadedAt === undefined ? '' : ` (serving the data of ${age(m.loadedAt)} ago)`}`;
    }

    const fine = new Set(['ok', 'not configured', 'standing by', 'starting', 'pending']);
    const failing = Object.entries(checks).filter(([, v]) => !fine.has(v));
    const list = Object.entries(checks).map(([name, v]): Check =>
      v === 'ok' ? { name, ok: true } : { name, ok: fine.has(v), detail: v },
    );
    return { ready: failing.length === 0, checks: list, failing: failing.map(([k, v]) => `${k}: ${v}`) };
  };

  return () => {
    if (last && Date.now() - last.at < 1_000) return Promise.resolve(last.report);
    inflight ??= run()
      .then((report) => {
        last = { at: Date.now(), report };
        return report;
      })
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  };
}
