import type { Check } from '../common/http/operator.js';
import type { UpstreamPool } from './upstream/pool.js';

/** How long readiness waits for the node's state read: a node that answers slower cannot serve clients either. */
const STATE_PROBE_TIMEOUT_MS = 2_000;
/** Probe results are shared this long, so frequent probes (or a flood of them) cost the node one read. */
const SHARED_MS = 1_000;

/**
 * The `node` check of /health/ready: one state read (eth_getBalance at latest) must be answered within
 * min(RPC_UPSTREAM_TIMEOUT_MS, 2 s). The `upstreams` check alone follows heads, which the tracker keeps answering when
 * a node is stuck (an endless execution held anvil: no new block, every state read timed out, readiness said "healthy
 * at head 525"). The detail names upstreams by id only (u0, u1): readiness bodies may be public, node URLs are not.
 */
export function stateReadiness(
  upstream: Pick<UpstreamPool, 'probeState'>,
  upstreamTimeoutMs: number,
): () => Promise<Check> {
  const timeoutMs = Math.min(upstreamTimeoutMs, STATE_PROBE_TIMEOUT_MS);
  let last: { at: number; check: Promise<Check> } | undefined;
  return () => {
    const now = performance.now();
    if (last && now - last.at < SHARED_MS) return last.check;
    const check = upstream
      .probeState(timeoutMs)
      .then((failure): Check =>
        failure === undefined
          ? { name: 'node', ok: true }
          : {
              name: 'node',
              ok: false,
              detail: `no node answered a state read (eth_getBalance at latest) within ${timeoutMs} ms: ${failure}`,
            },
      );
    last = { at: now, check };
    return check;
  };
}
