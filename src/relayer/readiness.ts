import { pooledRpc } from '../common/chain/pool.js';
import type { Check } from '../common/http/operator.js';
import { STANDING_BY, type RelayerRun } from './direction.js';
import type { SignerFunds } from './claim/funds.js';

/**
 * The readiness check of a direction's signers: failing while none of them can pay its next claim (claiming
 * of the direction is paused); while only some can, it passes and its detail names the paused ones.
 */
function fundsCheck(funds: readonly SignerFunds[]): Check {
  const checks = funds.map((f) => f.check());
  const failing = checks.filter((c) => !c.ok);
  const name = checks[0]!.name;
  if (failing.length === 0) return { name, ok: true };
  const detail = failing.map((c) => c.detail).join('; ');
  if (failing.length === checks.length) return { name, ok: false, detail };
  return {
    name,
    ok: true,
    detail: `${checks.length - failing.length} of ${checks.length} signers can claim; ${detail}`,
  };
}

async function probe(name: string, fn: () => Promise<unknown>): Promise<Check> {
  try {
    await fn();
    return { name, ok: true };
  } catch (err) {
    return { name, ok: false, detail: (err as Error).message };
  }
}

const blockNumber = (url: string) =>
  pooledRpc(url, 'eth_blockNumber', [], 3_000).catch((e: Error) =>
    Promise.reject(new Error(`eth_blockNumber failed: ${e.message}`)),
  );

/**
 * The relayer's readiness: the database and both nodes answer, both chains still match the database's pin, each
 * enabled direction's listener progresses
 * (or the direction stands by for another instance), and each leading direction's signers can pay a claim.
 */
export function relayerReadiness(run: RelayerRun): () => Promise<Check[]> {
  const { config, db } = run;
  return async () => {
    const checks = await Promise.all([
      probe('database', () => db.query('relayer.ready_probe', (k) => k.raw('select 1'), { retries: 0 })),
      probe('l1Rpc', () => blockNumber(config.l1.rpcUrl)),
      probe('l2Rpc', () => blockNumber(config.l2.rpcUrl)),
    ]);
    // A chain that no longer matches the database's pin (reset under the running relayer): named first, as the
    // cause of the stopped directions below.
    const mismatch = run.pin?.mismatch;
    if (mismatch !== undefined)
      checks.push({
        name: 'chainPin',
        ok: false,
        detail: `${mismatch}; claiming stopped on ${run.enabled.join(', ')}`,
      });
    for (const d of run.enabled) {
      const h = run.health[d]!;
      const interval = (d === 'L1_TO_L2' ? config.l1 : config.l2).listener.intervalMs;
      const staleMs = Math.max(5 * interval, 60_000);
      const name = `listener.${d}`;
      // A standby is ready: it takes over when the active instance goes (and an orchestrator rolling two
      // replicas waits for readiness, which a standby that never passed would block).
      if (h.state === STANDING_BY) checks.push({ name, ok: true, detail: STANDING_BY });
      else if (h.lastProgressAt === undefined)
        checks.push({ name, ok: false, detail: `listener not started (${h.state})` });
      else if (Date.now() - h.lastProgressAt > staleMs) {
        checks.push({
          name,
          ok: false,
          detail: `no block processed for ${Math.round((Date.now() - h.lastProgressAt) / 1000)} s (last processed block ${h.lastBlock ?? 'none'})`,
        });
      } else checks.push({ name, ok: true });
    }
    // After the listeners: whether each leading direction's signer can pay its next claim.
    for (const d of run.enabled) {
      const f = run.funds[d];
      if (f && run.health[d]!.state !== STANDING_BY) checks.push(fundsCheck(f));
    }
    return checks;
  };
}
