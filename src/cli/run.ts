import type { Common } from './context.js';

/**
 * Blocks a long-running command until SIGINT/SIGTERM, then runs the shutdown registry (everything the
 * command started, in reverse order) and resolves the exit code: 0 for a requested stop.
 */
export function runUntilStopped(common: Common): Promise<number> {
  return new Promise((resolve) => {
    common.shutdown.installSignalHandlers((code) => {
      common.logger.flush();
      // Whatever handle a dependency forgot to close must not keep a stopped service alive.
      setTimeout(() => process.exit(code), 500).unref();
      resolve(code);
    });
  });
}
