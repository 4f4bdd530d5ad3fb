import { rpcErrors, type RpcError } from '../common/errors.js';
import { ComputeGate } from './upstream/gate.js';
import type { Knex } from 'knex';
import type { DbClient } from '../common/db/client.js';
import type { Awaitable } from './types.js';

export type RateDecision =
  { ok: true } | { ok: false; retryAfterSeconds: number; limitPerSecond: number; burst: number };

/**
 * Cost model: every call costs 1 unit when the request arrives (refused when the bucket holds less than the request's
 * calls), and its answer costs 1 more unit per `bytesPerUnit` bytes once known (`charge`, which may take the bucket
 * below zero: the client then waits until it has refilled). So eth_chainId costs 1 unit, a 1,000-log eth_getLogs answer
 * (~600 KB) about 19 at the default 32 KiB per unit. Calls that make the node execute are also charged by the time they
 * took on it (computeCost): an eth_call running 40 ms costs 4 more units at the default 10 ms per unit, one cut at the
 * 5 s budget 500.
 */
export interface RateLimiter {
  /** A decision now (the memory bucket) or once the shared bucket answered (PostgreSQL). */
  take(client: string, cost: number): Awaitable<RateDecision>;
  /** Debits units already consumed (the size of an answer sent); never refuses. */
  charge(client: string, cost: number): Promise<void>;
}

export interface RateLimitSettings {
  perSecond: number;
  burst: number;
}

/** Units an answer of `bytes` bytes costs on top of its call's unit (RPC_RATE_LIMIT_BYTES_PER_UNIT; 0 = none). */
export const answerCost = (bytes: number, bytesPerUnit: number): number =>
  bytesPerUnit > 0 ? Math.floor(bytes / bytesPerUnit) : 0;

/**
 * Units a reply's execution costs on top of its calls' units: 1 per `msPerUnit` ms the node spent executing its
 * eth_call, estimates and traces of a call (RPC_RATE_LIMIT_MS_PER_UNIT; 0 = none). Time, not gas: the node reports no
 * gas for a failed eth_call, and time is what other clients lose.
 */
const computeCost = (ms: number, msPerUnit: number): number => (msPerUnit > 0 ? Math.floor(ms / msPerUnit) : 0);

/**
 * What one reply costs after it is known: the bytes the node returned (those answered, and those it returned for a call
 * then refused over the response budget: `dropped`) and its execution time (see answerCost, computeCost).
 */
export const replyCost = (
  reply: { used: number; dropped?: number; computeMs: number; units?: number },
  s: { bytesPerUnit: number; msPerUnit: number },
): number =>
  answerCost(reply.used + (reply.dropped ?? 0), s.bytesPerUnit) +
  computeCost(reply.computeMs, s.msPerUnit) +
  (reply.units ?? 0);

/**
 * Calls of one class (traces, wide eth_getLogs) one client may have in flight in this process. More wait for one of the
 * client's slots, first come first served, at most `waitMs` from their arrival (then -32005 naming the variable), as
 * calls wait for the node's execution slots (upstream/gate.ts, whose semaphore this reuses, one per client): one client
 * cannot fill the shared gate (RPC_EVM_MAX_CONCURRENT) or the node with its own work, and a client sending several at
 * once (a batch, a pipelined socket) is served one slot at a time instead of refused. Keyed by the rate limiter's
 * client; a call without one (the endpoint's own) is not counted. Only clients with a call in flight or waiting are
 * held, so the map is bounded by the calls in flight.
 */
export class ClientSlots {
  private readonly gates = new Map<string, ComputeGate>();

  /** `refused`: counts each call refused (the quota's metric). */
  constructor(
    readonly perClient: number,
    readonly waitMs: number,
    private readonly refused: () => void,
  ) {}

  /** A release function once `client` holds a slot, or undefined when `waitMs` passed first. */
  async take(client: string | undefined): Promise<(() => void) | undefined> {
    if (client === undefined) return () => undefined;
    let gate = this.gates.get(client);
    if (!gate) this.gates.set(client, (gate = new ComputeGate(this.perClient)));
    const release = await gate.enter(this.waitMs);
    if (!release) {
      this.refused();
      this.forget(client, gate);
      return undefined;
    }
    return () => {
      release();
      this.forget(client, gate);
    };
  }

  private forget(client: string, gate: ComputeGate): void {
    if (gate.inflight === 0 && gate.queued === 0 && this.gates.get(client) === gate) this.gates.delete(client);
  }
}

const allow: RateDecision = { ok: true };

function refused(s: RateLimitSettings, tokens: number, cost: number): RateDecision {
  return {
    ok: false,
    retryAfterSeconds: Math.max(1, Math.ceil((Math.min(cost, s.burst) - tokens) / s.perSecond)),
    limitPerSecond: s.perSecond,
    burst: s.burst,
  };
}

/** Token bucket per client in this process (one replica, or a load balancer with client affinity). */
export function memoryRateLimiter(s: RateLimitSettings): RateLimiter & { sweep(): void } {
  const buckets = new Map<string, { tokens: number; at: number }>();
  /** The client's bucket, refilled for the time since it was last touched. */
  const refilled = (client: string) => {
    const now = performance.now();
    const b = buckets.get(client) ?? { tokens: s.burst, at: now };
    b.tokens = Math.min(s.burst, b.tokens + ((now - b.at) / 1000) * s.perSecond);
    b.at = now;
    buckets.set(client, b);
    return b;
  };
  return {
    take(client, cost) {
      if (s.perSecond === 0) return allow;
      const b = refilled(client);
      if (b.tokens >= cost) {
        b.tokens -= cost;
        return allow;
      }
      return refused(s, b.tokens, cost);
    },
    async charge(client, cost) {
      if (s.perSecond === 0 || cost <= 0) return;
      refilled(client).tokens -= cost;
    },
    /** Full buckets carry no information: drop them so the map stays bounded. */
    sweep() {
      const now = performance.now();
      for (const [k, b] of buckets) if (b.tokens + ((now - b.at) / 1000) * s.perSecond >= s.burst) buckets.delete(k);
    },
  };
}

/**
 * Token bucket per client shared by every replica through Postgres: one upsert per HTTP request, atomic under
 * concurrency because ON CONFLICT DO UPDATE locks the client's row.
 */
export function postgresRateLimiter(
  db: DbClient,
  schema: string,
  s: RateLimitSettings,
): RateLimiter & { sweep(): Promise<void> } {
  const table = `${schema}.rate_limits`;
  // The client's tokens now: its stored count refilled for the time since (params: burst, perSecond: `bucket`).
  const refill = `least(?::float8, t.tokens + extract(epoch from (clock_timestamp() - t.updated_at)) * ?::float8)`;
  const bucket = [s.burst, s.perSecond];
  return {
    async take(client, cost) {
      if (s.perSecond === 0) return allow;
      const { rows } = (await db.query('rpc.rate_take', (k: Knex) =>
        k.raw(
          `insert into ${table} as t (client, tokens, allowed, updated_at)
           values (?, greatest(?::float8 - ?::float8, 0), ?::float8 >= ?::float8, clock_timestamp())
           on conflict (client) do update set
             tokens = case when ${refill} >= ?::float8 then ${refill} - ?::float8 else ${refill} end,
             allowed = ${refill} >= ?::float8,
             updated_at = clock_timestamp()
           returning tokens, allowed`,
          [client, s.burst, cost, s.burst, cost, ...bucket, cost, ...bucket, cost, ...bucket, ...bucket, cost],
        ),
      )) as { rows: { tokens: number | string; allowed: boolean }[] };
      const row = rows[0]!;
      return row.allowed ? allow : refused(s, Number(row.tokens), cost);
    },
    async charge(client, cost) {
      if (s.perSecond === 0 || cost <= 0) return;
      await db.query('rpc.rate_charge', (k: Knex) =>
        k.raw(
          `insert into ${table} as t (client, tokens, allowed, updated_at)
           values (?, ?::float8 - ?::float8, true, clock_timestamp())
           on conflict (client) do update set tokens = ${refill} - ?::float8, updated_at = clock_timestamp()`,
          [client, s.burst, cost, ...bucket, cost],
        ),
      );
    },
    async sweep() {
      await db.query('rpc.rate_sweep', (k) =>
        k.raw(`delete from ${table} where updated_at < clock_timestamp() - make_interval(secs => ?::float8)`, [
          s.burst / Math.max(s.perSecond, 1e-9) + 60,
        ]),
      );
    },
  };
}

/** -32005 naming a per-client quota of calls in flight (ClientSlots), its variable and the wait. */
export function quotaExceeded(what: string, limit: number, variable: string, waitedMs: number): RpcError {
  return rpcErrors.limitExceeded(
    `too many ${what} in flight: this client already has ${limit} (${variable} = ${limit}), and none finished within ${waitedMs} ms (RPC_EVM_TIMEOUT_MS); wait for an answer before sending the next.`,
    { cap: variable, limit },
  );
}
