/** The stages one of the others hands messages to. */
export type Stage = 'transaction-size' | 'anchoring' | 'claiming';

/**
 * Ends a loop's pause early when the stage before it has handed it messages. Each loop pauses its interval
 * between idle iterations (`*_LISTENER_INTERVAL`, 4 s by default), so a message stored right after the size
 * loop's last look waited a whole interval at each stage: listener → size → anchoring → claiming, up to ~12 s
 * before a restart's first claim. A ring while the loop is working ends its next pause at once (the
 * iteration under way may have read its rows before the new ones were written). A ring never starts more than
 * one extra iteration, so a loop runs at most as often as the stage before it hands it work.
 */
export class Wake {
  private end: (() => void) | undefined;
  private rung = false;

  ring(): void {
    if (this.end) this.end();
    else this.rung = true;
  }

  /** The loop's pause: `ms`, or until rung. False once `signal` aborts (as common/shutdown's sleep). */
  pause(ms: number, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.rung) {
      this.rung = false;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const done = (go: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.end = undefined;
        resolve(go);
      };
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(true), ms);
      signal.addEventListener('abort', onAbort, { once: true });
      this.end = () => done(true);
    });
  }
}

/** Rings the loop of `stage` of the direction, if it has one (processors run alone in tests have none). */
export function wake(ctx: { wakes?: Partial<Record<Stage, Wake>> }, stage: Stage): void {
  ctx.wakes?.[stage]?.ring();
}
