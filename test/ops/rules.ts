import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** The shipped alert rules, their unit tests and the Grafana dashboards of docker/, read for the checks. */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const ALERTS = join(root, 'docker/prometheus/alerts.yml');
export const ALERT_TESTS = join(root, 'docker/prometheus/alerts.test.yml');
export const DASHBOARDS = join(root, 'docker/grafana/dashboards');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
}
interface AlertTests {
  tests: { name: string; alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
}
interface Panel {
  title: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}
export interface Dashboard {
  uid: string;
  title: string;
  templating: { list: { name: string; type: string; query?: unknown }[] };
  panels: Panel[];
}

export const alertRules = (path = ALERTS): Rule[] =>
  (parse(readFileSync(path, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

export const alertTests = (path = ALERT_TESTS): AlertTests => parse(readFileSync(path, 'utf8')) as AlertTests;

export const dashboards = (dir = DASHBOARDS): { file: string; dashboard: Dashboard }[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, dashboard: JSON.parse(readFileSync(join(dir, file), 'utf8')) as Dashboard }));

const panelsOf = (panels: Panel[]): Panel[] => panels.flatMap((p) => [p, ...panelsOf(p.panels ?? [])]);

/** Every PromQL expression: each alert's and each dashboard panel target's (and each variable's label_values). */
export function expressions(): { where: string; expr: string }[] {
  const out = alertRules().map((r) => ({ where: `alerts.yml ${r.alert ?? r.record}`, expr: r.expr }));
  for (const { file, dashboard } of dashboards()) {
    for (const p of panelsOf(dashboard.panels))
      for (const t of p.targets ?? []) out.push({ where: `${file} "${p.title}"`, expr: t.expr });
    for (const v of dashboard.templating.list) {
      const q = typeof v.query === 'object' && v.query !== null ? (v.query as { query?: string }).query : undefined;
      const m = q && /^label_values\((\w+)/.exec(q);
      if (m) out.push({ where: `${file} variable ${v.name}`, expr: m[1]! });
    }
  }
  return out;
}

/** PromQL words that are not metric names where they stand as bare identifiers. */
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/**
 * The metric names an expression reads: identifiers not followed by "(" (a function or an aggregation), outside
 * strings, label matchers `{…}`, ranges `[…]` and label lists after by/without/on/ignoring/group_*.
 */
export function metricNames(expr: string): string[] {
  const text = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  // Numbers first, so 1e18 or 0x10 never yield an "e18"; then identifiers, noting whether a "(" follows.
  for (const m of text.matchAll(/(0x[0-9a-f]+|\d+(?:\.\d+)?(?:e[+-]?\d+)?)|([A-Za-z_:][\w:]*)(\s*\()?/gi)) {
    if (m[1] || !m[2] || m[3]) continue;
    if (!KEYWORDS.has(m[2].toLowerCase())) names.add(m[2]);
  }
  return [...names];
}
