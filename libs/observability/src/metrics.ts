import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One registry per process, with the product's metrics. */
export class Metrics {
  readonly registry = new Registry();

  readonly turns = new Counter({
    name: 'switchboard_turns_total',
    help: 'Turns ended, by terminal status (completed, failed, cancelled); pauses are counted apart',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly turnPauses = new Counter({
    name: 'switchboard_turn_pauses_total',
    help: 'Turns paused to wait (awaiting_approval, awaiting_subagent): not an end, they resume',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly httpRequests = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Gateway HTTP requests by method, route template and status code (OpenTelemetry http.server.request.duration)',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly turnDuration = new Histogram({
    name: 'switchboard_turn_duration_seconds',
    help: 'Wall time of a turn run, from pick-up to terminal state',
    labelNames: ['status'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
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
  readonly hooks = new Counter({
    name: 'switchboard_hook_runs_total',
    help: 'Post-turn hook runs by hook and outcome',
    labelNames: ['hook', 'outcome'] as const,
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

  constructor(service: string) {
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
}
