import { Gauge, type Registry } from 'prom-client';
import { counter, gauge, histogram } from '../common/metrics.js';
import { within } from '../common/concurrency.js';
import type { RelayerRepository } from './db/repository.js';

export type RelayerMetrics = ReturnType<typeof createRelayerMetrics>;

/**
 * The relayer's metrics on the process registry. Message counts are read from the database at scrape
 * time, so they are right whichever instance (or the cleaner, or an operator) changed a row.
 */
export function createRelayerMetrics(
  registry: Registry,
  repo: RelayerRepository,
  options: { stuckAfterSeconds?: number } = {},
) {
  scrapedGauge(
    registry,
    'relayer_messages',
    'Messages currently stored, by status and direction.',
    ['direction', 'status'],
    async (g) => {
      const rows = await repo.countsByStatus();
      g.reset();
      for (const r of rows) g.set({ direction: r.direction, status: r.status }, r.count);
    },
  );
  const seconds = options.stuckAfterSeconds ?? 600;
  const stuckHelp = `Messages claimable on their destination (ANCHORED, FEE_UNDERPRICED or PENDING) for longer than RELAYER_STUCK_AFTER_SECONDS (${seconds}) and not claimed.`;
  scrapedGauge(registry, 'relayer_messages_stuck', stuckHelp, ['direction'], async (g) => {
    const { counts } = await repo.stuck(seconds, 0);
    for (const d of ['L1_TO_L2', 'L2_TO_L1'] as const) g.set({ direction: d }, counts.get(d) ?? 0);
  });
  return {
    claimLatency: histogram(
      registry,
      'relayer_claim_latency_seconds',
      'Time from seeing a message anchored to seeing its claim receipt.',
      ['direction'],
      [0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800],
    ),
    listenerLag: gauge(
      registry,
      'relayer_listener_lag_blocks',
      'Blocks between the chain head and the last processed block.',
      ['direction'],
    ),
    listenerBlock: gauge(registry, 'relayer_listener_last_block', 'Last block whose MessageSent events were stored.', [
      'direction',
    ]),
    messagesSeen: counter(
      registry,
      'relayer_messages_seen_total',
      'MessageSent events stored, by direction and first status.',
      ['direction', 'status'],
    ),
    ...claimMetrics(registry),
    pollerErrors: counter(registry, 'relayer_poller_errors_total', 'Failed iterations of a pipeline loop.', [
      'direction',
      'poller',
    ]),
    pollerRuns: counter(registry, 'relayer_poller_runs_total', 'Completed iterations of a pipeline loop.', [
      'direction',
      'poller',
    ]),
    chainPinMismatch: gauge(
      registry,
      'relayer_chain_pin_mismatch',
      '1 while the chain answers another chain id or genesis block hash than the database is pinned to (every direction stopped), else 0.',
      ['chain'],
    ),
  };
}

/** What claiming does: claims sent and resolved, replacements and rebroadcasts, pauses, balances and spend. */
function claimMetrics(registry: Registry) {
  return {
    claimsSent: counter(
      registry,
      'relayer_claims_sent_total',
      'Claim transactions the destination node accepted (a broadcast it refused is not counted), by signer address.',
      ['direction', 'sponsored', 'signer'],
    ),
    claimsResolved: counter(
      registry,
      'relayer_claims_resolved_total',
      'Claim outcomes recorded by the receipt persister.',
      ['direction', 'status'],
    ),
    replacements: counter(
      registry,
      'relayer_claim_replacements_total',
      'Pending claim transactions replaced after MESSAGE_SUBMISSION_TIMEOUT: fee bumps and cancellations.',
      ['direction', 'kind'],
    ),
    rebroadcasts: counter(
      registry,
      'relayer_claim_rebroadcasts_total',
      "Claim transactions the node did not know, sent again from their stored signed bytes (same nonce and fees): trigger after_send = right after its broadcast, when the node's pending nonce shows it lacks the claim; lowest_nonce = the claim holding back the later nonces of its signer, after a ~1 s grace; age = any other claim after 10 s.",
      ['direction', 'trigger'],
    ),
    noncePaused: gauge(
      registry,
      'relayer_claiming_paused',
      '1 while claiming with this signer is paused because its database nonce is more than MAX_NONCE_DIFF ahead of the chain.',
      ['direction', 'signer'],
    ),
    signerBalance: gauge(
      registry,
      'relayer_signer_balance_wei',
      'Balance of each signer that claims this direction, in wei, read once per claiming iteration (a float: exact up to 2^53 wei).',
      ['direction', 'chain', 'signer'],
    ),
    fundsPaused: gauge(
      registry,
      'relayer_claiming_paused_funds',
      '1 while claiming with this signer is paused because it cannot pay the next claim or holds less than *_SIGNER_MIN_BALANCE_WEI.',
      ['direction', 'signer'],
    ),
    sponsoredWei: counter(registry, 'relayer_sponsored_spend_wei_total', 'Gas paid for sponsored claims, in wei.', [
      'direction',
    ]),
  };
}

/** A gauge read from the database at scrape time (once per registry); unreachable, it keeps its last values. */
function scrapedGauge<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: L[],
  read: (g: Gauge<L>) => Promise<void>,
): void {
  if (registry.getSingleMetric(name)) return;
  new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      // The database unreachable: readiness reports the outage.
      await read(this).catch(() => undefined);
    },
  });
}

/** How long a scrape waits for the readiness checks behind `relayer_ready`. */
const READINESS_SCRAPE_MS = 2_000;

/**
 * `relayer_ready`: 1 when GET /health/ready would answer 200, else 0, evaluated at scrape time with the same
 * checks (one `select 1` and one eth_blockNumber per chain), so an alert needs no probe of its own.
 */
export function registerReadinessGauge(registry: Registry, readiness: () => Promise<{ ok: boolean }[]>): void {
  // The latest relayer started on this registry reports (a stopped one's closed database must not).
  registry.removeSingleMetric('relayer_ready');
  new Gauge({
    name: 'relayer_ready',
    help: '1 when GET /health/ready answers 200 (every check passes), else 0; evaluated at scrape time.',
    registers: [registry],
    async collect() {
      // A check that hangs (a database connection being acquired, a node that does not answer) must not hold the
      // scrape, and with it every other metric: past READINESS_SCRAPE_MS the relayer counts as not ready.
      try {
        const ready = await within(readiness(), READINESS_SCRAPE_MS, 'readiness');
        this.set(ready.every((c) => c.ok) ? 1 : 0);
      } catch {
        this.set(0);
      }
    },
  });
}
