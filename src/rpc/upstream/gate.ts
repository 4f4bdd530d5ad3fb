import type { Registry } from 'prom-client';
import { rpcErrors, type RpcError } from '../../common/errors.js';
import { counter, gauge } from '../../common/metrics.js';
import type { ResponseBudget } from '../response-budget.js';

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

/**
 * The execution slots of one endpoint process (pool.ts `compute`): a call waits for one of RPC_EVM_MAX_CONCURRENT
 * and must be answered within RPC_EVM_TIMEOUT_MS of its arrival; the calls are counted by state, the timeouts
 * by where they were.
 */
export class ComputeSlots {
  private readonly gate: ComputeGate;
  private readonly calls;
  private readonly timeouts;

  constructor(
    private readonly limits: ComputeLimits,
    metrics: Registry,
  ) {
    this.gate = new ComputeGate(limits.maxConcurrent);
    this.calls = gauge(
      metrics,
      'l2stack_rpc_evm_calls',
      'Calls that make the node execute (eth_call, estimates, traces of a call), by state',
      ['state'],
    );
    this.timeouts = counter(
      metrics,
      'l2stack_rpc_evm_timeouts_total',
      'Calls that make the node execute cut at RPC_EVM_TIMEOUT_MS, by where they were',
      ['stage'],
    );
  }

  /**
   * `send` once a slot is held, given the time left of the call's budget (counted from `arrived`, when the call
   * waited before: trace/gate.ts); its time on the node is added to the budget's `computeMs`.
   */
  async run<T>(
    method: string,
    { budget, arrived = performance.now() }: { budget?: ResponseBudget; arrived?: number },
    send: (leftMs: number) => Promise<T>,
  ): Promise<T> {
    const { timeoutMs } = this.limits;
    const release = await this.gate.enter(timeoutMs - (performance.now() - arrived));
    this.noteGate();
    if (!release) throw this.timedOut(method, 'queued');
    const started = performance.now();
    const left = timeoutMs - (started - arrived);
    // A slot freed at the very end of the wait: too little time is left to be worth the node's work.
    if (left < Math.max(10, timeoutMs / 20)) {
      release();
      this.noteGate();
      throw this.timedOut(method, 'queued');
    }
    try {
      return await send(left);
    } finally {
      release();
      this.noteGate();
      if (budget) budget.computeMs += performance.now() - started;
    }
  }

  /** -32005 naming the budget, counted: the call queued or ran past RPC_EVM_TIMEOUT_MS. */
  timedOut(method: string, stage: 'queued' | 'running'): RpcError {
    this.timeouts.inc({ stage });
    const limitMs = this.limits.timeoutMs;
    const where =
      stage === 'queued'
        ? `waited ${limitMs} ms for one of the node's execution slots (RPC_EVM_MAX_CONCURRENT) without getting one`
        : `did not finish on the node within ${limitMs} ms`;
    return rpcErrors.limitExceeded(
      `execution timeout: ${method} ${where} (RPC_EVM_TIMEOUT_MS = ${limitMs}); it was abandoned. Send less gas or a cheaper call, or try again later.`,
      { cap: 'RPC_EVM_TIMEOUT_MS', limit: limitMs },
    );
  }

  private noteGate(): void {
    this.calls.set({ state: 'running' }, this.gate.inflight);
    this.calls.set({ state: 'queued' }, this.gate.queued);
  }
}
