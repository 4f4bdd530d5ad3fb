import type { Logger } from './log.js';

type Teardown = () => Promise<void> | void;

/**
 * Ordered teardown. Subsystems register their own cleanup as they start; `run` calls them in reverse
 * order (last started, first stopped: servers before pollers before the database), each bounded by a
 * timeout so one stuck dependency cannot keep the process alive.
 */
export class Shutdown {
  private readonly entries: { name: string; fn: Teardown }[] = [];
  private running: Promise<void> | undefined;
  private readonly controller = new AbortController();
  /** The stop was asked for (SIGINT/SIGTERM), not begun by a failure. */
  requested = false;

  constructor(
    private readonly logger?: Logger,
    private readonly timeoutMs = 10_000,
  ) {}

  /** Aborted when shutdown begins: background loops pass it to sleeps and fetches. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  add(name: string, fn: Teardown): void {
    this.entries.push({ name, fn });
  }

  run(reason = 'shutdown'): Promise<void> {
    this.running ??= this.drain(reason);
    return this.running;
  }

  private async drain(reason: string): Promise<void> {
    this.logger?.info({ reason }, 'shutting down');
    this.controller.abort(new Error(reason));
    const deadline = Date.now() + this.timeoutMs;
    for (const { name, fn } of [...this.entries].reverse()) {
      const left = Math.max(deadline - Date.now(), 100);
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          Promise.resolve().then(fn),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`teardown of ${name} timed out`)), left);
          }),
        ]);
      } catch (err) {
        this.logger?.warn({ err, name }, 'teardown failed');
      } finally {
        clearTimeout(timer);
      }
    }
  }

  /** SIGINT/SIGTERM run the teardown once and exit with `code` (0: a requested stop is a clean stop). */
  installSignalHandlers(onDone: (code: number) => void = (code) => process.exit(code)): void {
    const handler = (signal: NodeJS.Signals) => {
      if (this.running) return;
      this.requested = true;
      void this.run(signal).then(
        () => onDone(0),
        () => onDone(1),
      );
    };
    process.once('SIGINT', handler);
    process.once('SIGTERM', handler);
  }
}

/** Sleep that ends early (resolving false) when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
