import type { Registry } from 'prom-client';
import { counter } from '../../common/metrics.js';
import { hashApiKey, isApiKeyShaped } from './secret.js';
import type { ApiKeyRecord, ApiKeyStore } from './store.js';

export type KeyLookup = { kind: 'ok'; record: ApiKeyRecord } | { kind: 'unknown' } | { kind: 'revoked'; record: ApiKeyRecord };

export interface KeyRegistryOptions {
  /**
   * How long one replica trusts what it read about a key. A revocation reaches every replica within this
   * (the bound is one second), at the cost of one indexed lookup per key and period.
   */
  ttlMs: number;
  /** Keys remembered at most (distinct probes of random keys must not grow memory). */
  maxEntries: number;
  metrics?: Registry;
}

const DEFAULTS: KeyRegistryOptions = { ttlMs: 500, maxEntries: 10_000 };

/**
 * Answers "which key is this?" for every request of the private tier from memory, re-reading a key from
 * the database once its entry is older than ttlMs. Concurrent lookups of one key share one query.
 */
export class KeyRegistry {
  private readonly entries = new Map<string, { at: number; value: KeyLookup }>();
  private readonly inflight = new Map<string, Promise<KeyLookup>>();
  private readonly options: KeyRegistryOptions;
  private readonly lookups;

  constructor(private readonly store: ApiKeyStore, options: Partial<KeyRegistryOptions> = {}) {
    this.options = { ...DEFAULTS, ...options };
    this.lookups = options.metrics ? counter(options.metrics, 'l2stack_rpc_api_key_lookups_total', 'API key lookups by result and source', ['result', 'source'] as const) : undefined;
  }

  async lookup(key: string): Promise<KeyLookup> {
    if (!isApiKeyShaped(key)) {
      this.lookups?.inc({ result: 'unknown', source: 'shape' });
      return { kind: 'unknown' };
    }
    const hash = hashApiKey(key);
    const now = performance.now();
    const hit = this.entries.get(hash);
    if (hit && now - hit.at < this.options.ttlMs) {
      this.lookups?.inc({ result: hit.value.kind, source: 'memory' });
      return hit.value;
    }
    let pending = this.inflight.get(hash);
    if (!pending) {
      pending = this.read(hash).finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
    }
    return pending;
  }

  private async read(hash: string): Promise<KeyLookup> {
    const record = await this.store.findByHash(hash);
    const value: KeyLookup = !record ? { kind: 'unknown' } : record.revokedAt ? { kind: 'revoked', record } : { kind: 'ok', record };
    this.entries.delete(hash); // re-insert at the end: the map's order is the eviction order
    this.entries.set(hash, { at: performance.now(), value });
    while (this.entries.size > this.options.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.lookups?.inc({ result: value.kind, source: 'database' });
    return value;
  }
}
