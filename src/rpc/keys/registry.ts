import type { Registry } from 'prom-client';
import { counter } from '../../common/metrics.js';
import { hashApiKey, isApiKeyShaped } from './secret.js';
import type { ApiKeyRecord, ApiKeyStore } from './store.js';

export type KeyLookup =
  { kind: 'ok'; record: ApiKeyRecord } | { kind: 'unknown' } | { kind: 'revoked'; record: ApiKeyRecord };

const UNKNOWN: KeyLookup = Object.freeze({ kind: 'unknown' });

export interface KeyRegistryOptions {
  /**
   * How long one replica trusts what it read about a key. A revocation reaches every replica within this
   * (the bound is one second), at the cost of one indexed lookup per key and period.
   */
  ttlMs: number;
  /** Keys remembered at most (distinct probes of random keys must not grow memory). */
  maxEntries: number;
  /**
   * How long a key the database did not know is answered "unknown" from memory (the negative cache), so a
   * client retrying a wrong or deleted key costs no query. A key is random and printed only at creation, so
   * nobody can present it before it exists except through a replica that has not seen the insert yet: such
   * a key starts working within this bound.
   */
  unknownTtlMs: number;
  /** Unknown keys remembered at most, least recent out first (random probes are refused by the failure limit). */
  maxUnknown: number;
  metrics?: Registry;
}

const DEFAULTS: KeyRegistryOptions = { ttlMs: 500, maxEntries: 10_000, unknownTtlMs: 5_000, maxUnknown: 10_000 };

/**
 * Answers "which key is this?" for every request of the private tier from memory, re-reading a key from
 * the database once its entry is older than ttlMs (unknownTtlMs for keys the database did not know).
 * Concurrent lookups of one key share one query. Malformed keys never reach the database.
 */
export class KeyRegistry {
  private readonly entries = new Map<string, { at: number; value: KeyLookup }>();
  /** Hashes of keys the database did not know, with when it said so (kept apart so probes cannot evict live keys). */
  private readonly unknown = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<KeyLookup>>();
  private readonly options: KeyRegistryOptions;
  private readonly lookups;

  constructor(
    private readonly store: ApiKeyStore,
    options: Partial<KeyRegistryOptions> = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
    this.lookups = options.metrics
      ? counter(options.metrics, 'l2stack_rpc_api_key_lookups_total', 'API key lookups by result and source', [
          'result',
          'source',
        ] as const)
      : undefined;
  }

  /** What memory (or the key's shape) already says about a key, without a query; undefined: ask lookup. */
  cached(key: string): KeyLookup | undefined {
    if (!isApiKeyShaped(key)) {
      this.lookups?.inc({ result: 'unknown', source: 'shape' });
      return UNKNOWN;
    }
    return this.fromMemory(hashApiKey(key));
  }

  /**
   * Whether this replica has read the key as live at some point (its entry may be stale). Only the key's
   * holder can present such a key, so KeyAccess still looks it up for an address locked out by others'
   * failures (an owner behind the same NAT as an attacker keeps working); random probes never match.
   */
  seenLive(key: string): boolean {
    return isApiKeyShaped(key) && this.entries.get(hashApiKey(key))?.value.kind === 'ok';
  }

  async lookup(key: string): Promise<KeyLookup> {
    const remembered = this.cached(key);
    if (remembered) return remembered;
    const hash = hashApiKey(key);
    let pending = this.inflight.get(hash);
    if (!pending) {
      pending = this.read(hash).finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
    }
    return pending;
  }

  private fromMemory(hash: string): KeyLookup | undefined {
    const now = performance.now();
    const hit = this.entries.get(hash);
    if (hit && now - hit.at < this.options.ttlMs) {
      this.lookups?.inc({ result: hit.value.kind, source: 'memory' });
      return hit.value;
    }
    const missedAt = this.unknown.get(hash);
    if (missedAt !== undefined && now - missedAt < this.options.unknownTtlMs) {
      this.lookups?.inc({ result: 'unknown', source: 'memory' });
      return UNKNOWN;
    }
    return undefined;
  }

  private async read(hash: string): Promise<KeyLookup> {
    const record = await this.store.findByHash(hash);
    this.lookups?.inc({ result: !record ? 'unknown' : record.revokedAt ? 'revoked' : 'ok', source: 'database' });
    if (!record) {
      this.unknown.delete(hash);
      this.unknown.set(hash, performance.now());
      while (this.unknown.size > this.options.maxUnknown) this.unknown.delete(this.unknown.keys().next().value!);
      return UNKNOWN;
    }
    // A key that exists is no longer unknown (created within unknownTtlMs of a miss on another path).
    this.unknown.delete(hash);
    const value: KeyLookup = record.revokedAt ? { kind: 'revoked', record } : { kind: 'ok', record };
    this.entries.delete(hash); // re-insert at the end: the map's order is the eviction order
    this.entries.set(hash, { at: performance.now(), value });
    while (this.entries.size > this.options.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }
}
