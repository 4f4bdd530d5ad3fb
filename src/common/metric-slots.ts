import type { Counter, Histogram, Registry } from 'prom-client';

/**
 * A labelled histogram for the hottest paths (one observation per JSON-RPC call). prom-client hashes the label values
 * on every `observe`, also through a bound child (~1 µs a call on this machine, the largest item of a small call's own
 * cost); here a child is a slot of plain numbers and an observation is a bucket search and three additions. prom-client
 * still renders it: the object below is a metric of its registry (name, help, type, aggregator, get), so /metrics, the
 * cluster aggregation of RPC_WORKERS and the text format are prom-client's own.
 */
export interface SlotHistogram {
  /** The slot of these label values, created on first use; keep it (a lookup costs what the hash does). */
  child(...values: string[]): { observe(value: number): void };
  /** An observation by label values, for the cold paths (errors, unknown methods). */
  observe(values: readonly string[], value: number): void;
}

interface Slot {
  labels: Record<string, string>;
  /** Per bucket, non-cumulative; the last one is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** The slots of one metric by label values, each made by `make` on first use (one place for both kinds). */
function slotTable<S>(
  labelNames: readonly string[],
  make: (labels: Record<string, string>) => S,
): { slots: Map<string, S>; slotOf(values: readonly string[]): S } {
  const slots = new Map<string, S>();
  const slotOf = (values: readonly string[]): S => {
    const key = values.join('\u0000');
    let slot = slots.get(key);
    if (!slot) {
      slot = make(Object.fromEntries(labelNames.map((l, i) => [l, values[i] ?? ''])));
      slots.set(key, slot);
    }
    return slot;
  };
  return { slots, slotOf };
}

export function slotHistogram(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly string[],
  buckets: readonly number[],
): SlotHistogram {
  const existing = registry.getSingleMetric(name) as unknown as SlotHistogram | undefined;
  if (existing) return existing;
  const bounds = [...buckets].sort((a, b) => a - b);
  const { slots, slotOf } = slotTable(labelNames, (labels): Slot => ({
    labels,
    counts: new Float64Array(bounds.length + 1),
    sum: 0,
    count: 0,
  }));
  const record = (slot: Slot, value: number) => {
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    slot.counts[i]!++;
    slot.sum += value;
    slot.count++;
  };
  const metric = {
    name,
    help,
    type: 'histogram' as const,
    aggregator: 'sum' as const,
    collect: () => undefined,
    /** prom-client's histogram shape: cumulative `_bucket` lines with `le`, then `_sum` and `_count`. */
    get() {
      const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
      for (const slot of slots.values()) {
        // A slot bound in advance and never observed is no series yet (as with prom-client's children).
        if (slot.count === 0) continue;
        let cumulative = 0;
        for (let i = 0; i <= bounds.length; i++) {
          cumulative += slot.counts[i]!;
          values.push({
            labels: { le: i < bounds.length ? bounds[i]! : '+Inf', ...slot.labels },
            value: cumulative,
            metricName: `${name}_bucket`,
          });
        }
        values.push({ labels: slot.labels, value: slot.sum, metricName: `${name}_sum` });
        values.push({ labels: slot.labels, value: slot.count, metricName: `${name}_count` });
      }
      return Promise.resolve({ name, help, type: 'histogram' as const, aggregator: 'sum' as const, values });
    },
    reset() {
      slots.clear();
    },
    child(...values: string[]) {
      const slot = slotOf(values);
      return { observe: (value: number) => record(slot, value) };
    },
    observe(values: readonly string[], value: number) {
      record(slotOf(values), value);
    },
  };
  // The registry takes any object with prom-client's metric members; its declared type names the classes.
  registry.registerMetric(metric as unknown as Histogram);
  return metric;
}

/** A labelled counter of the same kind: a child is one number, `inc` one addition (see slotHistogram). */
export interface SlotCounter {
  child(...values: string[]): { inc(by?: number): void };
  inc(values: readonly string[], by?: number): void;
}

export function slotCounter(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly string[],
): SlotCounter {
  const existing = registry.getSingleMetric(name) as unknown as SlotCounter | undefined;
  if (existing) return existing;
  const { slots, slotOf } = slotTable(labelNames, (labels) => ({ labels, value: 0, touched: false }));
  const add = (slot: { value: number; touched: boolean }, by: number) => {
    slot.value += by;
    slot.touched = true;
  };
  const metric = {
    name,
    help,
    type: 'counter' as const,
    aggregator: 'sum' as const,
    collect: () => undefined,
    get() {
      // A slot bound in advance and never counted is no series yet (as with prom-client's children).
      const values = [...slots.values()].filter((s) => s.touched).map((s) => ({ labels: s.labels, value: s.value }));
      return Promise.resolve({ name, help, type: 'counter' as const, aggregator: 'sum' as const, values });
    },
    reset() {
      slots.clear();
    },
    child(...values: string[]) {
      const slot = slotOf(values);
      return { inc: (by = 1) => add(slot, by) };
    },
    inc(values: readonly string[], by = 1) {
      add(slotOf(values), by);
    },
  };
  registry.registerMetric(metric as unknown as Counter);
  return metric;
}
