import { isSpanContextValid, TraceFlags, trace, type Span } from '@opentelemetry/api';
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type LabelValues,
  type Metric,
  type RegistryContentType,
} from 'prom-client';

/** What GET /metrics answers: a body and its content type. */
export interface MetricsExposition {
  contentType: string;
  body: string;
}

/**
 * The exemplar labels of an observation made inside `span` (the active span when none is given):
 * its `trace_id` and `span_id`, which Grafana turns into a link to the trace (the Prometheus
 * datasource's `exemplarTraceIdDestinations`). Empty when there is no span or it is not sampled:
 * an exemplar pointing at a trace nobody exported would be a dead link.
 */
export function traceExemplar(span: Span | undefined = trace.getActiveSpan()): LabelValues<string> {
  const ctx = span?.spanContext();
  if (!ctx || !isSpanContextValid(ctx) || !(ctx.traceFlags & TraceFlags.SAMPLED)) return {};
  return { trace_id: ctx.traceId, span_id: ctx.spanId };
}

/** Whether an Accept header asks for OpenMetrics (what Prometheus sends when it can parse it). */
export function acceptsOpenMetrics(accept: string | undefined): boolean {
  return !!accept && /application\/openmetrics-text/i.test(accept);
}

/**
 * One registry per process, with the product's metrics. Render it with `expose()`, never with
 * `registry.metrics()` (which would rename the counters: see `render`).
 */
export class Metrics {
  readonly registry = registryOf(Registry.OPENMETRICS_CONTENT_TYPE);

  readonly turns = new Counter({
    name: 'switchboard_turns_total',
    help: 'Turns ended, by terminal status (completed, failed, cancelled); waits are counted apart',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  /**
   * Cancelled turns by why (docs/adr/0055): the CancelReason enum, so the label's values are bounded.
   * The worker counts a running turn it stopped; the gateway a queued or waiting turn it ended.
   */
  readonly turnsCancelled = new Counter({
    name: 'switchboard_turns_cancelled_total',
    help: 'Turns cancelled, by reason (api_cancel, client_disconnected, superseded, tenant_paused, agent_stopped, deadline, budget, operator)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  /** The metric's name keeps its word; a turn waits, it does not pause (docs/ARCHITECTURE.md glossary). */
  readonly turnWaits = new Counter({
    name: 'switchboard_turn_pauses_total',
    help: 'Turns that began waiting (awaiting_approval, awaiting_subagent): not an end, they resume',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly httpRequests = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Gateway HTTP requests by method, route template and status code (OpenTelemetry http.server.request.duration)',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
    // observe({ labels, value, exemplarLabels: traceExemplar(span) }): links a bucket to a trace.
    enableExemplars: true,
  });
  readonly turnDuration = new Histogram({
    name: 'switchboard_turn_duration_seconds',
    help: 'Wall time of a turn run, from pick-up to terminal state',
    labelNames: ['status'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
    enableExemplars: true,
  });
  readonly queueWait = new Histogram({
    name: 'switchboard_queue_wait_seconds',
    help: 'Time a job waited in its queue before a worker picked it up',
    labelNames: ['queue'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
    registers: [this.registry],
  });
  readonly providerCalls = new Histogram({
    name: 'switchboard_provider_call_duration_seconds',
    help: 'Provider call latency by outcome',
    labelNames: ['provider', 'model', 'outcome'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'switchboard_tokens_total',
    help: 'Tokens used, by direction (input, output; cached: read from the prompt cache, cache_write: written to it, both part of input)',
    labelNames: ['provider', 'model', 'direction'] as const,
    registers: [this.registry],
  });
  readonly costUsd = new Counter({
    name: 'switchboard_cost_usd_total',
    help: 'Provider spend in USD',
    labelNames: ['provider', 'model'] as const,
    registers: [this.registry],
  });
  readonly unpricedCalls = new Counter({
    name: 'switchboard_unpriced_model_calls_total',
    help: 'Provider calls booked at zero because their model has no known price (ADR 0007)',
    labelNames: ['provider', 'model'] as const,
    registers: [this.registry],
  });
  readonly toolCalls = new Counter({
    name: 'switchboard_tool_calls_total',
    help: 'Tool calls by tool and outcome',
    labelNames: ['tool', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly sideCalls = new Counter({
    name: 'switchboard_side_calls_total',
    help: 'Model calls outside the loop (summarize, reflect, compact) by outcome',
    labelNames: ['purpose', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly webhookDeliveries = new Counter({
    name: 'switchboard_webhook_deliveries_total',
    help: 'Webhook deliveries to triggers by scheme and outcome (accepted, duplicate, refused, not_found, paused)',
    labelNames: ['scheme', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'switchboard_rate_limited_total',
    help: 'Requests answered 429 by rate-limit bucket (admission, reads, writes, webhooks)',
    labelNames: ['bucket'] as const,
    registers: [this.registry],
  });
  readonly memoryRecall = new Histogram({
    name: 'switchboard_memory_recall_duration_seconds',
    help: "Memory recall before a turn's loop, by outcome (hits, empty, skipped: the agent has no memory, timeout, failed)",
    labelNames: ['outcome'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });
  readonly canaryDecisions = new Counter({
    name: 'switchboard_canary_decisions_total',
    help: 'Canaries ended (docs/adr/0064), by outcome: rolled_back (the hooks worker sweep), promoted, stopped (the API)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly hooks = new Counter({
    name: 'switchboard_hook_runs_total',
    help: 'Post-turn hook runs by hook and outcome',
    labelNames: ['hook', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly scores = new Counter({
    name: 'switchboard_scores_total',
    help: 'Scores the scoring hook wrote (docs/adr/0062), by scorer kind and status (scored, skipped, error)',
    labelNames: ['kind', 'status'] as const,
    registers: [this.registry],
  });

  readonly dbTransactions = new Counter({
    name: 'switchboard_db_transactions_total',
    help: 'Postgres transactions committed by the typed-SQL store (a lone statement is one), by component',
    labelNames: ['component'] as const,
    registers: [this.registry],
  });
  readonly dbStatements = new Counter({
    name: 'switchboard_db_statements_total',
    help: 'SQL statements the typed-SQL store sent (BEGIN and COMMIT not counted), by component',
    labelNames: ['component'] as const,
    registers: [this.registry],
  });
  readonly dbReads = new Counter({
    name: 'switchboard_db_reads_total',
    help: 'API reads routed with a read replica configured (docs/adr/0042), by the side that served them (replica, primary) and why (caught_up; lagging: not caught up within READ_REPLICA_MAX_WAIT_MS; replica_error: it failed)',
    labelNames: ['target', 'reason'] as const,
    registers: [this.registry],
  });
  readonly replicaLagBytes = new Gauge({
    name: 'switchboard_db_replica_lag_bytes',
    help: "WAL bytes the read replica had still to replay behind the primary's position at its last check",
    registers: [this.registry],
  });

  /**
   * How late the event loop ran a timer, one sample every `intervalMs` once `monitorEventLoop()`
   * started it. Cumulative, unlike prom-client's `nodejs_eventloop_lag_p99_seconds` (reset at every
   * scrape): a quantile over any window (histogram_quantile, or two readings' difference) reads
   * the same distribution whoever scrapes and how often. Buckets are fine around 50 ms, the
   * harness's goal for its p99 (docs/BENCHMARKS.md, in-flight capacity).
   */
  readonly eventLoopDelay = new Histogram({
    name: 'switchboard_event_loop_delay_seconds',
    help: 'Delay of the event loop: how late a periodic timer ran',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  constructor(private readonly service: string) {
    this.registry.setDefaultLabels({ service });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Samples the event loop's delay into `eventLoopDelay` until the returned function is called. */
  monitorEventLoop(intervalMs = 20): () => void {
    let due = performance.now() + intervalMs;
    const timer = setInterval(() => {
      const now = performance.now();
      this.eventLoopDelay.observe(Math.max(0, now - due) / 1000);
      // Node schedules the next run from when this one started.
      due = now + intervalMs;
    }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /**
   * The metrics in the format the scraper asked for: OpenMetrics (with the histograms' exemplars)
   * when its Accept header names `application/openmetrics-text`, as Prometheus does; the
   * Prometheus text format otherwise, which carries no exemplars (docs/adr/0040).
   */
  async expose(accept?: string): Promise<MetricsExposition> {
    const contentType = acceptsOpenMetrics(accept)
      ? Registry.OPENMETRICS_CONTENT_TYPE
      : Registry.PROMETHEUS_CONTENT_TYPE;
    return { contentType, body: await this.render(contentType) };
  }

  /**
   * The registry in one format. prom-client renders a registry in the one format it was made
   * with (OpenMetrics here: only an OpenMetrics registry accepts exemplar-enabled histograms), and
   * its OpenMetrics rendering renames each counter in place (`x_total` becomes `x`, for good). So
   * both formats are rendered through a registry made for the one request, a counter seen in
   * OpenMetrics through a copy carrying its family name; `registry.metrics()` is not called.
   */
  private async render(contentType: RegistryContentType): Promise<string> {
    const open = contentType === Registry.OPENMETRICS_CONTENT_TYPE;
    // getMetricsAsString is what metrics() calls for each metric; prom-client does not type it.
    const view = registryOf(contentType) as Registry<RegistryContentType> & {
      getMetricsAsString(metric: Pick<Metric, 'get'>): Promise<string>;
    };
    view.setDefaultLabels({ service: this.service });
    const families = await Promise.all(
      (this.registry.getMetricsAsArray() as unknown as Metric[]).map(async (metric) => {
        if (!open || (metric as unknown as { type: string }).type !== 'counter')
          return view.getMetricsAsString(metric);
        const values = await metric.get();
        return view.getMetricsAsString({ get: async () => ({ ...values, name: familyName(values) }) });
      }),
    );
    return open ? `${families.join('\n')}\n# EOF\n` : `${families.join('\n\n')}\n`;
  }
}

/** A registry rendering in `contentType` (prom-client's types omit the constructor's argument). */
function registryOf<T extends RegistryContentType>(contentType: T): Registry<T> {
  const registry = new Registry<T>();
  registry.setContentType(contentType);
  return registry;
}

/** A counter's OpenMetrics family name: its samples are `<family>_total`. */
function familyName(metric: { name: string }): string {
  return metric.name.replace(/_total$/, '');
}
