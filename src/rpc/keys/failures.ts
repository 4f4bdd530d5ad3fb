/**
 * Failed API key presentations per client address (RPC_KEY_FAILURES_PER_MINUTE): a token bucket of `perMinute` tokens
 * refilled at perMinute/60 a second. A key lookup that may fail takes a token *before* it runs and gives it back when
 * the key turns out live, so a flood of concurrent wrong keys cannot overshoot the allowance while their lookups are in
 * flight: the database sees at most the allowance (plus the refill) per address, whatever the request rate.
 *
 * In memory, per process: one replica's count, not the fleet's (a key's failures are not worth a database write each,
 * which is what this protects). At most `maxAddresses` are remembered, least recently failed out first, so spoofed or
 * many addresses cannot grow memory; an address pushed out starts afresh.
 */
export interface FailureLimitOptions {
  perMinute: number;
  maxAddresses?: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class KeyFailureLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly capacity: number;
  private readonly perMs: number;
  private readonly maxAddresses: number;

  constructor(
    readonly options: FailureLimitOptions,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.capacity = options.perMinute;
    this.perMs = options.perMinute / 60_000;
    this.maxAddresses = options.maxAddresses ?? 100_000;
  }

  /** Takes one token: 0 when taken, else the seconds until one is back (the Retry-After). */
  take(address: string): number {
    const now = this.now();
    const b = this.refilled(address, now);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      this.remember(address, b);
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.perMs / 1000));
  }

  /** Gives back the token of a lookup that found a live key (not a failure after all). */
  refund(address: string): void {
    const b = this.buckets.get(address);
    if (!b) return;
    b.tokens = Math.min(this.capacity, b.tokens + 1);
    // A full bucket is the same as none: forgetting it keeps the map to addresses that actually failed.
    if (b.tokens >= this.capacity) this.buckets.delete(address);
  }

  /** Addresses currently remembered (tests and the bound). */
  get size(): number {
    return this.buckets.size;
  }

  private refilled(address: string, now: number): Bucket {
    const b = this.buckets.get(address);
    if (!b) return { tokens: this.capacity, at: now };
    b.tokens = Math.min(this.capacity, b.tokens + (now - b.at) * this.perMs);
    b.at = now;
    return b;
  }

  private remember(address: string, b: Bucket): void {
    // Re-inserted at the end: the map's order is the eviction order (least recently failed first).
    this.buckets.delete(address);
    this.buckets.set(address, b);
    while (this.buckets.size > this.maxAddresses) this.buckets.delete(this.buckets.keys().next().value!);
  }
}
