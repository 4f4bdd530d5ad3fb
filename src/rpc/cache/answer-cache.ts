import type { Registry } from 'prom-client';
import { gauge } from '../../common/metrics.js';
import { slotCounter } from '../../common/metric-slots.js';
import { LARGE_ANSWER_CHARS, type RawJson } from '../upstream/raw-json.js';

/** How long an answer stays true: for good, or until the head moves (any new block or reorg). */
export type Lifetime = 'final' | 'head';

interface Entry {
  value: RawJson;
  bytes: number;
  lifetime: Lifetime;
  /** Read since eviction last passed it: it gets a second chance (moved to the young end) instead of going. */
  used: boolean;
}

/** Fixed cost per entry besides its key and text (map slot, object), so tiny answers are not free. */
const ENTRY_OVERHEAD = 64;

/**
 * Answers kept in memory, bounded in bytes (RPC_CACHE_BYTES; 0 turns it off), the oldest not read since
 * eviction last passed it evicted first (second chance: a hit sets a flag instead of reordering the map). What may be
 * kept and for how long is decided by cache/policy.ts; this only stores. Entries that live until the head moves are all
 * dropped at once by `headMoved`, so a reorg can never serve an answer of a block that left the chain. One entry is at
 * most an eighth of the budget.
 */
export class AnswerCache {
  private readonly entries = new Map<string, Entry>();
  private readonly headKeys = new Set<string>();
  private bytes = 0;
  private readonly hit;
  private readonly miss;
  private readonly size;

  constructor(
    readonly maxBytes: number,
    metrics: Registry,
  ) {
    // Slots (metric-slots.ts): a lookup is on the path of every cached call.
    const lookups = slotCounter(
      metrics,
      'l2stack_rpc_cache_lookups_total',
      'Answer cache lookups by outcome (hit or miss)',
      ['outcome'],
    );
    this.hit = lookups.child('hit');
    this.miss = lookups.child('miss');
    this.size = gauge(metrics, 'l2stack_rpc_cache_bytes', 'Bytes held by the answer cache (RPC_CACHE_BYTES bounds it)');
  }

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  get usedBytes(): number {
    return this.bytes;
  }

  get(key: string): RawJson | undefined {
    const e = this.entries.get(key);
    if (!e) {
      this.miss.inc();
      return undefined;
    }
    this.hit.inc();
    e.used = true;
    return e.value;
  }

  set(key: string, value: RawJson, lifetime: Lifetime): void {
    // A large answer also keeps its UTF-8 bytes (RawJson.bytes, made on its first reply): counted from the start.
    const bytes = key.length + value.length * (value.length > LARGE_ANSWER_CHARS ? 2 : 1) + ENTRY_OVERHEAD;
    if (bytes > this.maxBytes / 8) return;
    this.remove(key);
    this.bytes += bytes;
    // Room is made before the new answer goes in (else, with every other entry read, it would be the one to go):
    // oldest first (Map keeps insertion order); one read since the last pass moves an entry to the young end,
    // where this loop meets it again unflagged, so it ends.
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      if (!entry.used) {
        this.remove(oldest);
        continue;
      }
      entry.used = false;
      this.entries.delete(oldest);
      this.entries.set(oldest, entry);
    }
    this.entries.set(key, { value, bytes, lifetime, used: false });
    if (lifetime === 'head') this.headKeys.add(key);
    this.size.set(this.bytes);
  }

  /** Drops every answer that was true only at the previous head. */
  headMoved(): void {
    for (const key of this.headKeys) this.remove(key);
    this.headKeys.clear();
    this.size.set(this.bytes);
  }

  private remove(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    if (e.lifetime === 'head') this.headKeys.delete(key);
    this.bytes -= e.bytes;
  }
}
