import { describe, expect, it } from 'vitest';
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { slotCounter, slotHistogram } from '../../src/common/metric-slots.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const observations: [string, number][] = [
  ['a', 0.0005],
  ['a', 0.001],
  ['a', 0.05],
  ['b', 2],
  ['a', 0.5],
  ['b', 0.01],
];

/** The same observations through prom-client's own classes and through the slots: the text must be the same. */
function both() {
  const theirs = new Registry();
  const ours = new Registry();
  const h = new Histogram({ name: 'x_seconds', help: 'h', labelNames: ['m'], buckets: BUCKETS, registers: [theirs] });
  const c = new Counter({ name: 'x_total', help: 'c', labelNames: ['m', 'o'], registers: [theirs] });
  const sh = slotHistogram(ours, 'x_seconds', 'h', ['m'], BUCKETS);
  const sc = slotCounter(ours, 'x_total', 'c', ['m', 'o']);
  const bound = sh.child('a');
  // A child bound in advance and never used is no series, as with prom-client.
  sc.child('never', 'ok');
  sh.child('never');
  for (const [m, v] of observations) {
    h.observe({ m }, v);
    c.inc({ m, o: 'ok' });
    if (m === 'a') bound.observe(v);
    else sh.observe([m], v);
    sc.inc([m, 'ok']);
  }
  return { theirs, ours };
}

describe('metric slots', () => {
  it('behavior: a slot histogram and counter render exactly as prom-client renders the same observations', async () => {
    const { theirs, ours } = both();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('behavior: the cluster aggregation (RPC_WORKERS) sums slots as it sums prom-client metrics', async () => {
    const a = both();
    const b = both();
    const theirs = await AggregatorRegistry.aggregate([
      await a.theirs.getMetricsAsJSON(),
      await b.theirs.getMetricsAsJSON(),
    ]).metrics();
    const ours = await AggregatorRegistry.aggregate([
      await a.ours.getMetricsAsJSON(),
      await b.ours.getMetricsAsJSON(),
    ]).metrics();
    expect(ours).toBe(theirs);
  });

  it('behavior: asking twice for the same name returns the registered metric', () => {
    const r = new Registry();
    expect(slotCounter(r, 'y_total', 'c', ['m'])).toBe(slotCounter(r, 'y_total', 'c', ['m']));
    expect(slotHistogram(r, 'y_seconds', 'h', ['m'], BUCKETS)).toBe(slotHistogram(r, 'y_seconds', 'h', ['m'], BUCKETS));
  });
});
