import { RpcError, rpcErrors } from '../../common/errors.js';
import { redactUrl } from '../../common/config/env.js';
import { counter, gauge, histogram } from '../../common/metrics.js';
import { sleep } from '../../common/shutdown.js';
import { JsonRpcHttpClient } from './client.js';
import { UpstreamOversizeError, UpstreamTimeoutError } from './http-post.js';
import { ComputeSlots } from './gate.js';
import { UpstreamTransportError, upstreamUnavailable } from '../errors.js';
import { budgetSpent, responseTooLarge, type ResponseBudget } from '../response-budget.js';
import { HeadTracker } from '../head/tracker.js';
import { HeadSubscription, wsUrlFor } from '../head/subscription.js';
import type { RawJson } from './raw-json.js';
import { LARGE_ANSWERS, type Upstream, type UpstreamOptions, type UpstreamStatus } from './pool-types.js';

export type { UpstreamOptions, UpstreamStatus } from './pool-types.js';

/**
 * The execution nodes behind the endpoint. Reads go to the best healthy node (at the best head, fewest
 * requests in flight, fastest) and fail over to the next on transport failures; JSON-RPC error answers
 * are the node's verdict and are returned as they are. Writes go to one node and are resent elsewhere
 * only when the failure proves the request never left (connection refused).
 */
export class UpstreamPool {
  private readonly upstreams: Upstream[];
  private readonly metrics;
  private stopped = false;
  private loop: Promise<void> | undefined;
  /** Methods some upstream answered with "method not found", so the endpoint serves them another way. */
  private readonly unsupported = new Set<string>();
  /** The pool's one head (see head/tracker.ts). */
  readonly tracker: HeadTracker;
  private readonly subscriptions: HeadSubscription[] = [];
  private polling: Promise<void> | undefined;
  /** A write went through since the last head move: `latest` may already be newer than the tracker says. */
  private written = false;
  /** Counts writes, so a poll that began after the last write may clear `written`. */
  private writes = 0;
  private readonly slots: ComputeSlots;

  constructor(private readonly options: UpstreamOptions) {
    this.upstreams = options.urls.map((url, i) => ({
      id: `u${i}`,
      shown: redactUrl(url),
      client: new JsonRpcHttpClient(url, options.timeoutMs, options.limits),
      healthy: true,
      wrongChain: false,
      head: undefined,
      inflight: 0,
      latencyMs: 0,
      lastError: undefined,
      live: false,
    }));
    this.tracker = new HeadTracker({
      depth: options.headDepth,
      logger: options.logger,
      blockByHash: async (hash) =>
        (await this.request('eth_getBlockByHash', [hash, false])) as Record<string, unknown> | null,
    });
    this.tracker.subscribe(() => {
      this.written = false;
    });
    const m = options.metrics;
    this.slots = new ComputeSlots(options.compute, m);
    this.metrics = {
      up: gauge(m, 'l2stack_rpc_upstream_up', 'Whether the upstream node answers (1) or not (0)', ['upstream']),
      head: gauge(m, 'l2stack_rpc_upstream_head_block', 'Latest block number seen on the upstream node', ['upstream']),
      requests: counter(m, 'l2stack_rpc_upstream_requests_total', 'Requests sent to upstream nodes by outcome', [
        'upstream',
        'outcome',
      ]),
      latency: histogram(m, 'l2stack_rpc_upstream_request_duration_seconds', 'Latency of upstream requests', [
        'upstream',
      ]),
    };
    for (const u of this.upstreams) this.metrics.up.set({ upstream: u.id }, 1);
  }

  /** Starts head tracking; resolves after the first round so readiness is known at start. */
  async start(signal: AbortSignal): Promise<void> {
    await this.pollHeads();
    this.loop = (async () => {
      while (!this.stopped && (await sleep(this.options.headPollMs, signal))) await this.refreshHead();
    })();
    const ws =
      this.options.wsUrls ?? this.options.urls.map((url) => (/^https?:/.test(url) ? wsUrlFor(url) : undefined));
    this.upstreams.forEach((u, i) => {
      const url = ws[i];
      if (!url) return;
      const sub = new HeadSubscription({
        url,
        retryMs: Math.max(1_000, this.options.headPollMs * 5),
        logger: this.options.logger,
        onLive: (live) => {
          u.live = live;
        },
        onHeader: (header) => {
          if (u.wrongChain) return;
          const n = (header as { number?: unknown } | null)?.number;
          if (typeof n === 'string') this.noteHead(u, BigInt(n));
          this.tracker.observe(header, u.id);
        },
      });
      sub.start();
      this.subscriptions.push(sub);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const s of this.subscriptions) s.stop();
    await this.loop?.catch(() => undefined);
    for (const u of this.upstreams) u.client.close();
  }

  /**
   * Whether the tracked head is as fresh as the nodes: a healthy upstream pushes its new heads, and no
   * write went through since the last head move (a write may have made a block we have not heard of).
   */
  get headIsLive(): boolean {
    if (this.written) return false;
    for (const u of this.upstreams) if (u.live && u.healthy && !u.wrongChain) return true;
    return false;
  }

  /** One poll of every upstream's head, shared by all callers that want it at the same time. */
  refreshHead(): Promise<void> {
    this.polling ??= this.pollHeads().finally(() => {
      this.polling = undefined;
    });
    return this.polling;
  }

  /** The head block number: the tracker's when it is live, else after one (shared) poll of the nodes. */
  async freshHead(): Promise<bigint> {
    if (!this.headIsLive || this.tracker.head === undefined) {
      await this.refreshHead();
      await this.tracker.settled();
    }
    const head = this.tracker.head?.number ?? this.head;
    if (head === undefined)
      throw upstreamUnavailable(
        this.status()
          .map((u) => `${u.id}: ${u.lastError ?? 'no head yet'}`)
          .join('; '),
      );
    return head;
  }

  private noteHead(u: Upstream, head: bigint): void {
    u.head = head;
    this.metrics.head.set({ upstream: u.id }, Number(head));
    this.markUp(u);
  }

  private async pollHeads(): Promise<void> {
    const timeoutMs = Math.min(this.options.timeoutMs, 5_000);
    const writes = this.writes;
    await Promise.all(
      this.upstreams.map(async (u) => {
        try {
          if (this.options.chainId !== undefined && !u.wrongChain && u.head === undefined) {
            const c = (await u.client.call('eth_chainId', [], { timeoutMs })).raw?.value;
            if (typeof c === 'string' && Number(BigInt(c)) !== this.options.chainId) {
              u.wrongChain = true;
              this.options.logger.error(
                { upstream: u.shown, chainId: Number(BigInt(c)), expected: this.options.chainId },
                'upstream serves another chain; not using it',
              );
            }
          }
          const [latest, finalized] = await Promise.all([
            u.client.call('eth_getBlockByNumber', ['latest', false], { timeoutMs }),
            // Nodes without the tag (or a chain without finality) answer an error: then nothing is "final".
            u.client.call('eth_getBlockByNumber', ['finalized', false], { timeoutMs }).catch(() => undefined),
          ]);
          const header = latest.raw?.value as { number?: unknown } | null | undefined;
          if (typeof header?.number !== 'string') throw new Error(latest.error?.message ?? 'no latest block');
          this.noteHead(u, BigInt(header.number));
          if (u.wrongChain) return;
          this.tracker.observe(header, u.id);
          const f = finalized?.raw?.value as { number?: unknown } | null | undefined;
          if (typeof f?.number === 'string') this.tracker.observeFinalized(BigInt(f.number), u.id);
        } catch (err) {
          this.markDown(u, err);
        }
      }),
    );
    // Every write before this poll is reflected in the heads it read (or made no block).
    await this.tracker.settled();
    if (this.writes === writes && this.upstreams.some((u) => u.healthy)) this.written = false;
  }

  private markUp(u: Upstream): void {
    if (!u.healthy) this.options.logger.info({ upstream: u.shown }, 'upstream is answering again');
    u.healthy = true;
    u.lastError = undefined;
    this.metrics.up.set({ upstream: u.id }, 1);
  }

  private markDown(u: Upstream, err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    if (u.healthy) this.options.logger.warn({ upstream: u.shown, err: message }, 'upstream is not answering');
    u.healthy = false;
    u.lastError = message;
    this.metrics.up.set({ upstream: u.id }, 0);
  }

  /** The best head among healthy upstreams (from tracking; at most one poll interval old). */
  get head(): bigint | undefined {
    let best: bigint | undefined;
    for (const u of this.upstreams)
      if (u.healthy && !u.wrongChain && u.head !== undefined && (best === undefined || u.head > best)) best = u.head;
    return best;
  }

  status(): UpstreamStatus[] {
    return this.upstreams.map((u) => ({
      id: u.id,
      url: u.shown,
      healthy: u.healthy && !u.wrongChain,
      head: u.head?.toString(),
      lastError: u.lastError,
    }));
  }

  isSupported(method: string): boolean {
    return !this.unsupported.has(method);
  }

  markUnsupported(method: string): void {
    this.unsupported.add(method);
  }

  /** Healthy, caught-up upstreams first; then the rest (a node may be back before tracking noticed). */
  private ordered(): Upstream[] {
    const best = this.head;
    const rank = (u: Upstream) => {
      if (u.wrongChain) return 3;
      if (!u.healthy) return 2;
      if (best !== undefined && u.head !== undefined && best - u.head > BigInt(this.options.maxLagBlocks)) return 1;
      return 0;
    };
    return this.upstreams
      .filter((u) => !u.wrongChain)
      .sort((a, b) => rank(a) - rank(b) || a.inflight - b.inflight || a.latencyMs - b.latencyMs);
  }

  /**
   * Sends one call and returns its result; a JSON-RPC error answer is thrown as RpcError with the node's
   * code, message and data. `write` calls are never resent after an ambiguous failure.
   */
  async request(
    method: string,
    params: readonly unknown[],
    options: { write?: boolean; budget?: ResponseBudget } = {},
  ): Promise<unknown> {
    return (await this.requestRaw(method, params, options)).value;
  }

  /** As request, with the result as the node wrote it (pass-through answers are never parsed). */
  async requestRaw(
    method: string,
    params: readonly unknown[],
    options: { write?: boolean; budget?: ResponseBudget } = {},
  ): Promise<RawJson> {
    if (!options.write) return this.send(method, params, options);
    // Until a poll that began after this write has read the heads, `latest` may be ahead of the tracker.
    this.written = true;
    this.writes++;
    try {
      return await this.send(method, params, options);
    } finally {
      this.writes++;
    }
  }

  /**
   * A call that makes the node execute code (eth_call, gas estimates, traces of a call): it waits for one
   * of RPC_EVM_MAX_CONCURRENT slots and must be answered within RPC_EVM_TIMEOUT_MS of its arrival, else
   * -32005 naming the budget. Its time on the node is added to the reply's `computeMs` (rate units,
   * ratelimit.ts). A timeout is the call's cost, not the node's fault: the node is not marked down and the
   * call is not sent to another node (that would only spend a second node on it). `arrived`: the call's
   * arrival, when it waited before (trace/gate.ts): the budget counts from it.
   */
  async compute(
    method: string,
    params: readonly unknown[],
    options: { budget?: ResponseBudget; arrived?: number } = {},
  ): Promise<RawJson> {
    const spent = budgetSpent(options.budget);
    if (spent !== undefined) throw responseTooLarge(spent);
    return this.slots.run(method, options, (computeMs) =>
      this.send(method, params, { budget: options.budget, computeMs }),
    );
  }

  /**
   * Whether some node serves a state read now: eth_getBalance at latest within `timeoutMs`, on each node
   * that is not known to serve another chain. The head tracker answers eth_blockNumber even when the node
   * is stuck (an endless execution holding it), so readiness asks for state. Undefined when one answered.
   */
  async probeState(timeoutMs: number): Promise<string | undefined> {
    const failures: string[] = [];
    const asked = this.upstreams
      .filter((x) => !x.wrongChain)
      .map(async (u) => {
        const r = await u.client
          .call('eth_getBalance', [`0x${'0'.repeat(40)}`, 'latest'], { timeoutMs })
          .catch((err: unknown) => ({ error: { message: err instanceof Error ? err.message : String(err) } }));
        if (!r.error) return true;
        failures.push(`${u.id}: ${r.error.message}`);
        throw new Error('no state');
      });
    if (asked.length > 0 && (await Promise.any(asked).catch(() => false))) return undefined;
    return failures.join('; ') || 'no upstream is configured';
  }

  private async send(
    method: string,
    params: readonly unknown[],
    options: { write?: boolean; budget?: ResponseBudget; computeMs?: number },
  ): Promise<RawJson> {
    // The reply this call belongs to is already full: asking a node would only produce bytes to drop.
    const spent = budgetSpent(options.budget);
    if (spent !== undefined) throw responseTooLarge(spent);
    const candidates = this.ordered();
    const failures: string[] = [];
    let oversize: UpstreamOversizeError | undefined;
    let oversized = 0;
    for (const u of candidates) {
      const started = performance.now();
      u.inflight++;
      try {
        const response = await u.client.call(method, params, {
          batch: !options.write,
          alone: LARGE_ANSWERS.has(method),
          timeoutMs: options.computeMs,
        });
        const ms = performance.now() - started;
        u.latencyMs = u.latencyMs === 0 ? ms : u.latencyMs * 0.9 + ms * 0.1;
        this.metrics.latency.observe({ upstream: u.id }, ms / 1000);
        if (!u.healthy) this.markUp(u);
        if (response.error) {
          this.metrics.requests.inc({ upstream: u.id, outcome: 'rpc_error' });
          const e = response.error;
          throw new RpcError(
            typeof e.code === 'number' ? e.code : -32603,
            typeof e.message === 'string' ? e.message : 'upstream error',
            e.data,
          );
        }
        this.metrics.requests.inc({ upstream: u.id, outcome: 'ok' });
        return response.raw!;
      } catch (err) {
        if (!(err instanceof UpstreamTransportError)) throw err;
        if (options.computeMs !== undefined && err instanceof UpstreamTimeoutError) {
          this.metrics.requests.inc({ upstream: u.id, outcome: 'evm_timeout' });
          throw this.slots.timedOut(method, 'running');
        }
        if (err instanceof UpstreamOversizeError) {
          // Our request or its answer is too big: that says nothing about the node, so it stays up for
          // everyone else; another node may take a bigger body, but every node gives the same answer.
          this.metrics.requests.inc({ upstream: u.id, outcome: `oversize_${err.kind}` });
          if (err.kind === 'response') throw responseTooLarge(this.options.limits.maxResponseBytes, err.message);
          oversize = err;
          oversized++;
          failures.push(`${u.id}: ${err.message}`);
          continue;
        }
        this.metrics.requests.inc({ upstream: u.id, outcome: 'transport_error' });
        this.markDown(u, err);
        failures.push(`${u.id}: ${err.message}`);
        if (options.write && err.ambiguous) {
          throw upstreamUnavailable(
            `${method} may have reached the node before it failed (${err.message}); it was not sent again. Look the transaction up by hash before sending it again.`,
            { ambiguous: true },
          );
        }
      } finally {
        u.inflight--;
      }
    }
    if (oversize && oversized === failures.length) {
      throw rpcErrors.limitExceeded(
        `request too large for the upstream nodes: ${failures.join('; ')}. Send a smaller request (fewer addresses, topics or calldata).`,
        { requestBytes: oversize.bytes },
      );
    }
    throw upstreamUnavailable(failures.join('; ') || 'no upstream is configured');
  }
}
