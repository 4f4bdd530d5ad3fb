import { createLogger, type Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { Shutdown } from './shutdown.js';
import type { Registry } from 'prom-client';
import type { LevelWithSilent } from 'pino';

/**
 * The small context every subsystem factory receives (after Ponder's `Common`): where it logs, where its
 * metrics go, and where it registers its teardown. It lives at the ground (src/common) so that services
 * depend on it without depending on the command line.
 */
export interface Common {
  logger: Logger;
  metrics: Registry;
  shutdown: Shutdown;
}

export function createCommon(options: { level?: LevelWithSilent; name?: string } = {}): Common {
  const logger = createLogger(options);
  return { logger, metrics: createMetrics(), shutdown: new Shutdown(logger) };
}
