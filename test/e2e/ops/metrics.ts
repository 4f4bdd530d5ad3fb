import { expect } from 'vitest';
import { expressions, metricNames } from '../../ops/rules.js';

/**
 * Issue 25 item 4: every metric named in an alert rule (docker/prometheus/alerts.yml) or a dashboard panel
 * (docker/grafana/dashboards/*.json) is exported by the running services. test/e2e/devnet/dev.test.ts runs this
 * against the `l2stack dev` (what `npm start` runs) it starts for all its checks, so one process serves them all: the
 * /metrics of the relayer API, the RPC endpoint and the token API are scraped, and each name must be a metric family
 * they declare (`# TYPE`), a histogram's _bucket/_sum/_count included. A labelled family with no child yet (a counter
 * of an event that has not happened, e.g. reverted claims) is declared without samples: that is still the service
 * exporting it; the names without a sample are printed.
 */

/** Series Prometheus makes itself, not the services. */
const PROMETHEUS_MADE = new Set(['up']);

/**
 * The names a scrape exports: each declared family (with a histogram's and summary's series names) and each sample's.
 */
export function exportedNames(text: string): { declared: Set<string>; sampled: Set<string> } {
  const declared = new Set<string>();
  const sampled = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\w+)/.exec(line);
    if (type) {
      const [, name, kind] = type as unknown as [string, string, string];
      declared.add(name);
      if (kind === 'histogram') for (const s of ['_bucket', '_sum', '_count']) declared.add(name + s);
      if (kind === 'summary') for (const s of ['_sum', '_count']) declared.add(name + s);
      continue;
    }
    const sample = /^([A-Za-z_:][\w:]*)[{ ]/.exec(line);
    if (sample) sampled.add(sample[1]!);
  }
  return { declared, sampled };
}

/** Scrapes each service's /metrics (`services`: name -> base URL) and expects every rule's and panel's metric. */
export async function expectRuleMetricsExported(services: Record<string, string | undefined>): Promise<void> {
  const declared = new Set<string>();
  const sampled = new Set<string>();
  for (const [name, url] of Object.entries(services)) {
    expect(url, `${name} URL in the state file`).toBeTruthy();
    const res = await fetch(`${url}/metrics`);
    expect(res.status, `${name} /metrics`).toBe(200);
    const names = exportedNames(await res.text());
    expect(names.declared.size, `${name} /metrics declares metric families`).toBeGreaterThan(10);
    for (const n of names.declared) declared.add(n);
    for (const n of names.sampled) sampled.add(n);
  }
  const used = new Map<string, string[]>();
  for (const { where, expr } of expressions())
    for (const n of metricNames(expr)) used.set(n, [...(used.get(n) ?? []), where]);
  expect(used.size).toBeGreaterThan(30);
  const missing = [...used]
    .filter(([n]) => !PROMETHEUS_MADE.has(n) && !declared.has(n))
    .map(([n, where]) => `${n} (${where.join('; ')})`);
  expect(missing).toEqual([]);
  const unsampled = [...used.keys()].filter((n) => !PROMETHEUS_MADE.has(n) && !sampled.has(n));
  if (unsampled.length > 0)
    console.log(`declared, no sample yet (labelled families before their first event): ${unsampled.join(', ')}`);
}
