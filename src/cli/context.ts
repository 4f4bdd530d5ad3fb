import { createLogger, type Logger } from '../common/log.js';
import { createMetrics } from '../common/metrics.js';
import { Shutdown } from '../common/shutdown.js';
import type { Registry } from 'prom-client';
import type { LevelWithSilent } from 'pino';

/** The small context every subsystem factory receives (after Ponder's `Common`). */
export interface Common {
  logger: Logger;
  metrics: Registry;
  shutdown: Shutdown;
}

export function createCommon(options: { level?: LevelWithSilent; name?: string } = {}): Common {
  const logger = createLogger(options);
  return { logger, metrics: createMetrics(), shutdown: new Shutdown(logger) };
}
