import type { Logger } from '../../common/log.js';
import { sleep } from '../../common/shutdown.js';
import { errorMessage } from '../../common/errors.js';
import type { RelayerMetrics } from '../metrics.js';
import type { Waker } from './waker.js';

export interface LoopOptions {
  name: string;
  direction: string;
  intervalMs: number;
  signal: AbortSignal;
  logger: Logger;
  metrics: RelayerMetrics;
  /** One iteration; resolves true when there is more work right away (no pause before the next). */
  tick: () => Promise<boolean>;
  /** Ends the pause early when another loop hands this one work (waker.ts). */
  waker?: Waker;
}

/**
 * A cancellable background loop: an iteration that fails is logged and counted, never fatal, and the
 * loop pauses `intervalMs` between idle iterations (less when its waker is woken). Resolves once the signal aborts and
 * the current iteration has finished (so shutdown drains in-flight work before the database closes).
 */
export async function runLoop(o: LoopOptions): Promise<void> {
  const labels = { direction: o.direction, poller: o.name };
  let failures = 0;
  while (!o.signal.aborted) {
    let more = false;
    try {
      more = await o.tick();
      o.metrics.pollerRuns.inc(labels);
      failures = 0;
    } catch (err) {
      failures++;
      o.metrics.pollerErrors.inc(labels);
      // The first failure with its stack, repeats briefly: an RPC outage should not flood the log.
      if (failures === 1) o.logger.warn({ err, poller: o.name }, `${o.name} iteration failed; retrying`);
      else o.logger.debug({ poller: o.name, failures, error: errorMessage(err) }, `${o.name} still failing`);
    }
    if (!more && !(await (o.waker ? o.waker.pause(o.intervalMs, o.signal) : sleep(o.intervalMs, o.signal)))) break;
  }
}
