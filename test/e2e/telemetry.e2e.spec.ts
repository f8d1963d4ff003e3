import { createServer, type Server } from 'node:http';
import net from 'node:net';
import { createTestEnv, spawnGateway, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';

/**
 * Telemetry as a Jaeger or Grafana user meets it (issue 23), from a real gateway process exporting
 * OTLP/HTTP (JSON) to a collector this test runs: the service is named without OTEL_SERVICE_NAME,
 * server spans are named by their route with `http.route` (an unmatched path keeps the method
 * alone), and /metrics counts requests by method, route template and status.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; intValue?: string } }[];
}
interface OtlpExport {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}

const attr = (s: OtlpSpan, key: string) => s.attributes.find((a) => a.key === key)?.value.stringValue;

describe('telemetry from a gateway process', () => {
  let env: TestEnv;
  let gateway: AppProcess & { url: string };
  let collector: Server;
  let base: string;
  const exports: OtlpExport[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    collector = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        if (req.url === '/v1/traces') exports.push(JSON.parse(body) as OtlpExport);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const { port: collectorPort } = collector.address() as net.AddressInfo;
    gateway = await spawnGateway(
      env.processEnv({
        OTEL_SDK_DISABLED: 'false',
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collectorPort}`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      }),
    );
    base = gateway.url;
  });

  afterAll(async () => {
    await gateway?.kill('SIGTERM');
    await new Promise((resolve) => collector?.close(resolve));
    await env?.cleanup();
  });

  const spans = () =>
    exports.flatMap((e) =>
      e.resourceSpans.flatMap((r) =>
        r.scopeSpans.flatMap((s) =>
          s.spans.map((span) => ({
            span,
            service: r.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue,
          })),
        ),
      ),
    );

  it('names the service and each server span by its route; an unmatched path keeps the method', async () => {
    const { api } = await newTenant(base, ADMIN, 'traced');
    expect((await api.get('/v1/agents/01a20360-0000-7000-8000-000000000000')).status).toBe(404);
    expect((await new Api(base).get('/no/such/route')).status).toBe(404);

    const seen = await waitFor(
      () => {
        const all = spans();
        const names = all.map((s) => s.span.name);
        return names.includes('POST /v1/admin/tenants') &&
          names.includes('GET /v1/agents/:id') &&
          names.includes('GET')
          ? all
          : undefined;
      },
      { what: 'the server spans at the collector' },
    );
    const server = (name: string) => seen.find((s) => s.span.name === name)!;
    expect(server('POST /v1/admin/tenants').service).toBe('switchboard-gateway');
    expect(attr(server('POST /v1/admin/tenants').span, 'http.route')).toBe('/v1/admin/tenants');
    expect(attr(server('GET /v1/agents/:id').span, 'http.route')).toBe('/v1/agents/:id');
    expect(attr(server('GET').span, 'http.route')).toBeUndefined();
    // The raw path is never the span's name: ids would make every span name unique.
    expect(seen.some((s) => s.span.name.includes('01a20360'))).toBe(false);
  });

  it('counts requests on /metrics by method, route template and status, unmatched paths as one', async () => {
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(
      /http_server_request_duration_seconds_count\{service="gateway",method="POST",route="\/v1\/admin\/tenants",status_code="201"\} [1-9]/,
    );
    expect(metrics).toMatch(
      /http_server_request_duration_seconds_count\{service="gateway",method="GET",route="\/v1\/agents\/:id",status_code="404"\} [1-9]/,
    );
    expect(metrics).toMatch(
      /http_server_request_duration_seconds_count\{service="gateway",method="GET",route="unmatched",status_code="404"\} [1-9]/,
    );
    expect(metrics).not.toContain('/no/such/route');
    // The Prometheus text format carries no exemplars (a plain scrape could not parse them).
    expect(metrics).not.toContain('trace_id');
  });

  it('links request durations to their traces with exemplars when scraped as OpenMetrics', async () => {
    const res = await fetch(`${base}/metrics`, {
      headers: { accept: 'application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5' },
    });
    expect(res.headers.get('content-type')).toBe(
      'application/openmetrics-text; version=1.0.0; charset=utf-8',
    );
    const body = await res.text();
    expect(body.endsWith('# EOF\n')).toBe(true);
    const exemplar = body.match(
      /^http_server_request_duration_seconds_bucket\{[^}]*route="\/v1\/admin\/tenants",status_code="201"[^}]*\} \d+ # \{trace_id="([0-9a-f]{32})",span_id="([0-9a-f]{16})"\} [\d.e-]+ [\d.]+$/m,
    );
    expect(exemplar).not.toBeNull();
    // It names the request's server span, as the collector received it.
    const [, traceId, spanId] = exemplar!;
    const span = spans().find((s) => s.span.traceId === traceId && s.span.spanId === spanId);
    expect(span?.span.name).toBe('POST /v1/admin/tenants');
    // Counters keep their names in both formats, whichever was scraped first.
    expect(body).toMatch(/^# TYPE switchboard_rate_limited counter$/m);
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(
      /^# TYPE switchboard_rate_limited_total counter$/m,
    );
  });
});
