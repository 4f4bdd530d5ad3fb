import type { ListQuery, OrderColumn } from '../repository.js';
import { comparator, lowerBound, type Comparator } from './order.js';
import { toRecord, type TokenRecord } from './record.js';
import { pruneBefore, seriesJson, upsertHour, windowHours, type HourlyRows } from './series.js';
import type { Delta } from './source.js';
import { CandleTable, candlesAt } from './candles.js';
import { priceSources, type StoredExplanation } from './sources-json.js';

const EMPTY_SERIES = Buffer.from('[]');

/** Above this many changed tokens an index is rebuilt rather than patched (a sort beats k splices). */
const PATCH_LIMIT = 512;

interface Prices extends HourlyRows {
  /** The series JSON (UTF-8) for one window position (see windowKey). */
  cached?: { key: number; bytes: Buffer };
}

/** Identifies the window at `now`: the series changes only when its first or last hour does. */
const windowKey = (now: number) => {
  const { first, last } = windowHours(now);
  return first * 2 + (last - first) / 3_600_000 - 24;
};

/**
 * The token table and the hourly price window of one replica, in memory. Indexes per (order, sort) are built on first
 * use and patched on change, so a page is a slice; the isSecure views are filtered from them on first use after a
 * change. Everything is synchronous: a request reads one version, never a state between two deltas.
 */
export class ReadModel {
  /** Highest change number applied; -1 until the first load. */
  version = -1;
  private readonly tokens = new Map<string, TokenRecord>();
  private readonly prices = new Map<string, Prices>();
  private readonly indexes = new Map<string, { cmp: Comparator; list: TokenRecord[] }>();
  private readonly views = new Map<string, TokenRecord[]>();
  private readonly sources = new Map<string, StoredExplanation>();
  /**
   * Answers of getTokenPriceSources by token, for the minute they were made in; dropped when the token or its
   * explanation changes.
   */
  private readonly sourcesJson = new Map<string, { minute: number; bytes: Buffer }>();
  private readonly candles = new Map<string, { rows: CandleTable; cached?: { key: string; bytes: Buffer } }>();
  private prunedAt = 0;

  get size(): { tokens: number; pricePoints: number } {
    let pricePoints = 0;
    for (const p of this.prices.values()) pricePoints += p.hours.length;
    return { tokens: this.tokens.size, pricePoints };
  }

  /** Applies one delta read from the database (see source.ts). */
  apply(delta: Delta): void {
    const changed: [TokenRecord | undefined, TokenRecord][] = [];
    for (const row of delta.tokens) {
      const next = toRecord(row);
      changed.push([this.tokens.get(next.address), next]);
      this.tokens.set(next.address, next);
      this.sourcesJson.delete(row.address);
    }
    for (const p of delta.prices) {
      let rows = this.prices.get(p.token);
      if (!rows) this.prices.set(p.token, (rows = { hours: [], prices: [] }));
      upsertHour(rows, p.hourMs, p.price);
      rows.cached = undefined;
      // A changed price row changes the candles' closes too.
      const entry = this.candles.get(p.token);
      if (entry) entry.cached = undefined;
    }
    for (const r of delta.sources) {
      this.sources.set(r.token, r.detail);
      this.sourcesJson.delete(r.token);
    }
    for (const c of delta.candles) {
      let entry = this.candles.get(c.token);
      if (!entry) this.candles.set(c.token, (entry = { rows: new CandleTable() }));
      entry.rows.set(c);
      entry.cached = undefined;
    }
    if (changed.length > 0) this.reindex(changed);
    this.version = Math.max(this.version, delta.version);
  }

  private reindex(changed: [TokenRecord | undefined, TokenRecord][]): void {
    this.views.clear();
    if (changed.length > PATCH_LIMIT) {
      this.indexes.clear();
      return;
    }
    for (const { cmp, list } of this.indexes.values()) {
      for (const [old, next] of changed) {
        if (old) {
          const at = lowerBound(list, old, cmp);
          if (list[at] === old) list.splice(at, 1);
        }
        list.splice(lowerBound(list, next, cmp), 0, next);
      }
    }
  }

  private index(order: OrderColumn, sort: 'asc' | 'desc'): TokenRecord[] {
    const key = `${order}:${sort}`;
    let entry = this.indexes.get(key);
    if (!entry) {
      const cmp = comparator(order, sort);
      entry = { cmp, list: [...this.tokens.values()].sort(cmp) };
      this.indexes.set(key, entry);
    }
    return entry.list;
  }

  private view(order: OrderColumn, sort: 'asc' | 'desc', secure: boolean | undefined): TokenRecord[] {
    const all = this.index(order, sort);
    if (secure === undefined) return all;
    const key = `${order}:${sort}:${secure}`;
    let list = this.views.get(key);
    if (!list) this.views.set(key, (list = all.filter((r) => r.isSecure === secure)));
    return list;
  }

  /** One page of the list: O(limit) from the index, or a sort of the at most 100 requested addresses. */
  page(q: ListQuery): { rows: TokenRecord[]; total: number } {
    const offset = (q.page - 1) * q.limit;
    if (q.addresses !== undefined) {
      const picked: TokenRecord[] = [];
      for (const a of q.addresses) {
        const r = this.tokens.get(a);
        if (r && (q.isSecure === undefined || r.isSecure === q.isSecure)) picked.push(r);
      }
      picked.sort(comparator(q.order, q.sort));
      return { rows: picked.slice(offset, offset + q.limit), total: picked.length };
    }
    const list = this.view(q.order, q.sort, q.isSecure);
    return { rows: list.slice(offset, offset + q.limit), total: list.length };
  }

  token(address: string): TokenRecord | undefined {
    return this.tokens.get(address);
  }

  /** The token's hourly series at `now` as UTF-8 JSON (`[]` for a token without prices or an unknown one). */
  seriesJson(address: string, now: number): Buffer {
    const rows = this.prices.get(address);
    if (!rows) return EMPTY_SERIES;
    const key = windowKey(now);
    if (rows.cached?.key !== key) {
      this.pruneOnce(now);
      rows.cached = { key, bytes: Buffer.from(seriesJson(rows, now)) };
    }
    return rows.cached.bytes;
  }

  /** The token's candles at `now` as UTF-8 JSON (see candles.ts); `[]` for a token without prices. */
  candlesJson(address: string, now: number): Buffer {
    const prices = this.prices.get(address);
    if (!prices) return EMPTY_SERIES;
    let entry = this.candles.get(address);
    if (!entry) this.candles.set(address, (entry = { rows: new CandleTable() }));
    // The current hour's twap moves with the minute; the series with the window.
    const key = `${windowKey(now)}|${Math.floor(now / 60_000)}`;
    if (entry.cached?.key !== key) {
      this.pruneOnce(now);
      entry.cached = { key, bytes: Buffer.from(JSON.stringify(candlesAt(prices, entry.rows, now))) };
    }
    return entry.cached.bytes;
  }

  /**
   * getTokenPriceSources' answer as UTF-8 JSON for a known token (undefined for an unknown one), made once a minute.
   */
  priceSourcesJson(address: string, now: number): Buffer | undefined {
    const rec = this.tokens.get(address);
    if (!rec) return undefined;
    const minute = Math.floor(now / 60_000);
    let cached = this.sourcesJson.get(address);
    if (cached?.minute !== minute) {
      cached = { minute, bytes: Buffer.from(JSON.stringify(priceSources(rec, this.sources.get(address), now))) };
      this.sourcesJson.set(address, cached);
    }
    return cached.bytes;
  }

  /** Rows older than the window are dropped once per hour, as the indexer prunes its table. */
  private pruneOnce(now: number): void {
    const { first } = windowHours(now);
    if (first <= this.prunedAt) return;
    this.prunedAt = first;
    for (const rows of this.prices.values()) pruneBefore(rows, first);
    for (const entry of this.candles.values()) entry.rows.prune(first);
  }
}
