/**
 * Ends a pipeline loop's pause early when work was handed to it: a loop that moves messages into the statuses the next
 * loop reads wakes that loop at once (RelayerRepository.onEntered), instead of leaving the messages until its next
 * interval. Each hand-off of the pipeline (SENT → size → anchoring → claiming) cost up to one interval before; at a
 * start with a backlog that was up to three intervals before the first claim, and in steady operation as much latency
 * per message. A wake that comes during an iteration ends the next pause at once, so a hand-off is never missed. Only
 * this process's own writes wake (another replica's are seen at the next interval, as before).
 */
export class Waker {
  private woken = false;
  private wakeNow: (() => void) | undefined;

  wake(): void {
    if (this.wakeNow) this.wakeNow();
    else this.woken = true;
  }

  /** Waits `ms`, or until woken; resolves false when `signal` aborts. */
  pause(ms: number, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.woken) {
      this.woken = false;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const done = (carryOn: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.wakeNow = undefined;
        resolve(carryOn);
      };
      const timer = setTimeout(() => done(true), ms);
      const onAbort = () => done(false);
      signal.addEventListener('abort', onAbort, { once: true });
      this.wakeNow = () => done(true);
    });
  }
}
