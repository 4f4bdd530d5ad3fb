import { Writable } from 'node:stream';
import type { LevelWithSilent } from 'pino';
import type { Common } from '../../src/common/kernel.js';
import { createLogger } from '../../src/common/log.js';
import { createMetrics } from '../../src/common/metrics.js';
import { Shutdown } from '../../src/common/shutdown.js';

/**
 * The one `Common` of the tests: a fresh metrics registry (no process metrics, so two services in one
 * test process do not collide), its own shutdown registry, and a logger whose lines are kept in `logs`
 * for a test to read. Silent unless a level is given; LOG_LEVEL raises it and echoes the lines to stderr
 * when debugging a run.
 */
export function testCommon(level?: LevelWithSilent): Common & { logs: string[] } {
  const fromEnv = process.env.LOG_LEVEL as LevelWithSilent | undefined;
  const logs: string[] = [];
  const destination = new Writable({
    write: (chunk, _encoding, done) => {
      logs.push(String(chunk));
      if (fromEnv !== undefined) process.stderr.write(chunk);
      done();
    },
  });
  const logger = createLogger({ level: fromEnv ?? level ?? 'silent', destination });
  return { logger, metrics: createMetrics({ defaultMetrics: false }), shutdown: new Shutdown(logger), logs };
}
