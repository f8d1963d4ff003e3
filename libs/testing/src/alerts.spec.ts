/**
 * ops/prometheus/alerts.yml, checked without Prometheus: every rule is complete (a name, an
 * expression, a `for`, a severity, a summary and a description), every metric it reads is one the
 * apps export with the labels it filters on, and the compose stack loads the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Metrics } from '@switchboard/observability';
import { parse } from 'yaml';

const ROOT = path.resolve(__dirname, '../../..');
const read = (file: string) => parse(fs.readFileSync(path.join(ROOT, file), 'utf8')) as Record<string, any>;

interface Rule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** Metric name → its label names: the product's metrics, and the gateway's queue gauge (gateway.module.ts). */
async function exported(): Promise<Map<string, string[]>> {
  const metrics = new Metrics('alerts-spec');
  const names = new Map<string, string[]>();
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    const labels = (metrics.registry.getSingleMetric(m.name) as unknown as { labelNames: string[] })
      .labelNames;
    names.set(m.name, [...labels]);
  }
  names.set('switchboard_queue_jobs', ['queue', 'state']);
  return names;
}

describe('Prometheus alert rules', () => {
  const rules: Rule[] = (read('ops/prometheus/alerts.yml').groups as { rules: Rule[] }[]).flatMap(
    (g) => g.rules,
  );

  it('cover queue depth and age, turn failures, provider errors, turn latency and gateway errors', () => {
    expect(rules.map((r) => r.alert).sort()).toEqual([
      'SwitchboardGatewayErrors',
      'SwitchboardProviderErrorRate',
      'SwitchboardQueueBacklog',
      'SwitchboardQueueWaitHigh',
      'SwitchboardTurnFailureRate',
      'SwitchboardTurnLatencyP99',
    ]);
  });

  it('are complete: an expression, a duration, a severity, a summary and a description each', () => {
    for (const r of rules) {
      expect({ alert: r.alert, for: /^\d+[smh]$/.test(r.for) }).toEqual({ alert: r.alert, for: true });
      expect(['warning', 'critical']).toContain(r.labels.severity);
      expect(r.annotations.summary.length).toBeGreaterThan(10);
      expect(r.annotations.description.length).toBeGreaterThan(10);
      expect(r.expr.trim().length).toBeGreaterThan(0);
    }
  });

  it('read only metrics the apps export, filtered by labels those metrics have', async () => {
    const known = await exported();
    for (const r of rules) {
      const series = [...r.expr.matchAll(/\b((?:switchboard|http_server)_[a-z_]+)(\{[^}]*\})?/g)];
      expect({ alert: r.alert, reads: series.length > 0 }).toEqual({ alert: r.alert, reads: true });
      for (const [, raw, selector] of series) {
        const name = raw.replace(/_(bucket|count|sum)$/, '');
        expect({ alert: r.alert, metric: name, exported: known.has(name) }).toEqual({
          alert: r.alert,
          metric: name,
          exported: true,
        });
        const labels = [...(selector ?? '').matchAll(/([a-z_]+)\s*(=~|!=|!~|=)/g)].map((m) => m[1]);
        for (const label of labels) {
          expect({ metric: name, label, known: known.get(name)!.includes(label) || label === 'le' }).toEqual({
            metric: name,
            label,
            known: true,
          });
        }
      }
    }
  });

  it('are loaded by the compose stack: listed in rule_files and mounted where it says', () => {
    expect(read('ops/prometheus/prometheus.yml').rule_files).toEqual(['/etc/prometheus/alerts.yml']);
    const volumes: string[] = read('docker-compose.yml').services.prometheus.volumes;
    expect(volumes).toContain('./ops/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro');
  });
});
