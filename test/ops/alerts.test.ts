import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ALERTS, ALERT_TESTS, root, alertRules, alertTests, dashboards, expressions, metricNames } from './rules.js';

/**
 * Issue 25 item 4: the alert rules and dashboards of docker/. promtool (Debian's `prometheus` package; CI
 * installs it) checks the rules and runs their unit tests; the rest needs nothing but the files. That every
 * metric named here is exported by the running services is test/e2e/ops/metrics.ts (run by e2e/devnet/dev.test.ts).
 */
const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;
if (!promtool)
  console.log(
    'test/ops/alerts.test.ts: promtool not installed (apt-get install prometheus): the promtool checks are skipped',
  );

const run = (args: string[]) => {
  const r = spawnSync('promtool', args, { encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
};

describe('alert rules and dashboards (docker/)', () => {
  it.skipIf(!promtool)('behavior: promtool check rules accepts alerts.yml', () => {
    const r = run(['check', 'rules', ALERTS]);
    expect(r.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(r.status, r.output).toBe(0);
  });

  it.skipIf(!promtool)('behavior: promtool test rules passes alerts.test.yml', () => {
    const r = run(['test', 'rules', ALERT_TESTS]);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain('SUCCESS');
  });

  it.skipIf(!promtool)("behavior: promtool check config accepts the compose stack's prometheus.yml", () => {
    // The container mounts alerts.yml at /etc/prometheus/alerts.yml: the copy checked here points at the file.
    const dir = mkdtempSync(join(tmpdir(), 'l2stack-prometheus-'));
    const config = parse(readFileSync(join(root, 'docker/prometheus/prometheus.yml'), 'utf8')) as {
      rule_files: string[];
      scrape_configs: { job_name: string }[];
    };
    expect(config.rule_files).toEqual(['/etc/prometheus/alerts.yml']);
    expect(config.scrape_configs.map((c) => c.job_name)).toEqual(['relayer', 'rpc', 'token-api']);
    writeFileSync(join(dir, 'prometheus.yml'), stringify({ ...config, rule_files: [ALERTS] }));
    const r = run(['check', 'config', join(dir, 'prometheus.yml')]);
    expect(r.status, r.output).toBe(0);
  });

  it('behavior: every alert has a unit test that fires it', () => {
    const alerts = alertRules()
      .map((r) => r.alert)
      .filter((a): a is string => a !== undefined);
    expect(alerts.length).toBeGreaterThanOrEqual(10);
    const fired = new Set(
      alertTests().tests.flatMap((t) =>
        (t.alert_rule_test ?? []).filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname),
      ),
    );
    expect(alerts.filter((a) => !fired.has(a))).toEqual([]);
  });

  it("behavior: the issue's alerts are all there", () => {
    const exprs = alertRules()
      .map((r) => r.expr)
      .join('\n');
    for (const needle of [
      'relayer_ready',
      'relayer_chain_pin_mismatch',
      'relayer_claiming_paused_funds',
      'predict_linear(relayer_signer_balance_wei',
      'relayer_messages_stuck',
      'CLAIMED_REVERTED',
      'relayer_listener_lag_blocks',
      'l2stack_rpc_upstream_up',
      'l2stack_rpc_calls_total',
      'l2stack_token_indexer_indexed_block',
    ]) {
      expect(exprs).toContain(needle);
    }
  });

  it('behavior: one provisionable dashboard per service, each panel with a PromQL query on the chosen datasource', () => {
    const all = dashboards();
    expect(all.map((d) => d.file)).toEqual(['relayer.json', 'rpc.json', 'token-api.json']);
    expect(new Set(all.map((d) => d.dashboard.uid)).size).toBe(3);
    for (const { file, dashboard } of all) {
      expect(dashboard.templating.list.find((v) => v.name === 'datasource')?.type, file).toBe('datasource');
      expect(dashboard.panels.length, file).toBeGreaterThanOrEqual(6);
      for (const p of dashboard.panels as unknown as {
        title: string;
        datasource: { uid: string };
        targets: { expr: string }[];
      }[]) {
        expect(p.datasource.uid, `${file} ${p.title}`).toBe('${datasource}');
        expect(p.targets.length, `${file} ${p.title}`).toBeGreaterThan(0);
      }
    }
  });

  it('behavior: metric names are read out of PromQL (functions, labels, ranges and numbers are not names)', () => {
    expect(
      metricNames(
        'sum by (job, direction) (rate(relayer_claims_resolved_total{status="CLAIMED_REVERTED"}[15m])) / 1e18 > 0.1',
      ),
    ).toEqual(['relayer_claims_resolved_total']);
    expect(
      metricNames('histogram_quantile(0.95, sum by (le) (rate(a_bucket[5m]))) and on (instance) b == 0 or time() - c'),
    ).toEqual(['a_bucket', 'b', 'c']);
    expect(
      metricNames('relayer_signer_balance_wei > 0 and predict_linear(relayer_signer_balance_wei[6h], 2 * 86400) <= 0'),
    ).toEqual(['relayer_signer_balance_wei']);
    expect(expressions().length).toBeGreaterThan(40);
  });

  it.skipIf(!promtool)('behavior: promtool accepts every dashboard query', () => {
    // Each panel query as a recording rule: `promtool check rules` parses it, and names the one that does not.
    const dir = mkdtempSync(join(tmpdir(), 'l2stack-dashboards-'));
    const file = join(dir, 'queries.yml');
    const rules = expressions().map(({ expr }, i) => ({
      record: `dashboard_query_${i}`,
      expr: expr.replace(/\$instance/g, '.*'),
    }));
    writeFileSync(file, stringify({ groups: [{ name: 'dashboards', rules }] }));
    const r = run(['check', 'rules', file]);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain(`SUCCESS: ${rules.length} rules found`);
  });
});
