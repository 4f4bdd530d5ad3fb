import { rpcErrors, type RpcError } from '../../common/errors.js';

/**
 * The time budget and the concurrency bound of calls that make the node execute code (eth_call, gas
 * estimates, traces of a call, simulations): RPC_EVM_TIMEOUT_MS and RPC_EVM_MAX_CONCURRENT.
 */
export interface ComputeLimits {
  /** Time from arrival to answer, waiting for a slot included. */
  timeoutMs: number;
  /** Such calls running on the nodes at once, per endpoint process. */
  maxConcurrent: number;
}

/** geth's RPCEVMTimeout (5 s); 4 at once keeps most of a small node's cores for reads and block production. */
export const DEFAULT_COMPUTE_LIMITS: ComputeLimits = { timeoutMs: 5_000, maxConcurrent: 4 };

/** -32005 naming the budget: the call queued or ran past RPC_EVM_TIMEOUT_MS. */
export function computeTimeout(method: string, limitMs: number, stage: 'queued' | 'running'): RpcError {
  const where =
    stage === 'queued'
      ? `waited ${limitMs} ms for one of the node's execution slots (RPC_EVM_MAX_CONCURRENT) without getting one`
      : `did not finish on the node within ${limitMs} ms`;
  return rpcErrors.limitExceeded(
    `execution timeout: ${method} ${where} (RPC_EVM_TIMEOUT_MS = ${limitMs}); it was abandoned. Send less gas or a cheaper call, or try again later.`,
    { cap: 'RPC_EVM_TIMEOUT_MS', limit: limitMs },
  );
}

/**
 * A counting semaphore with a deadline per waiter, first come first served. anvil has no EVM timeout and
 * does not stop executing when the HTTP request is abandoned, so the endpoint's own protection is the gas
 * cap (which bounds one execution) and this gate (which bounds how many run at once): ordinary reads keep
 * the node's remaining capacity however many compute calls arrive.
 */
export class ComputeGate {
  private running = 0;
  private readonly waiting: { grant: () => void }[] = [];

  constructor(readonly max: number) {}

  get inflight(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** A release function once a slot is held, or undefined when `waitMs` passed first. */
  enter(waitMs: number): Promise<(() => void) | undefined> {
    if (this.running < this.max) {
      this.running++;
      return Promise.resolve(this.releaser());
    }
    if (waitMs <= 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const entry = {
        grant: () => {
          clearTimeout(timer);
          resolve(this.releaser());
        },
      };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(undefined);
      }, waitMs);
      this.waiting.push(entry);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The slot passes straight to the next waiter: `running` stays, so no newcomer can jump the queue.
      const next = this.waiting.shift();
      if (next) next.grant();
      else this.running--;
    };
  }
}
