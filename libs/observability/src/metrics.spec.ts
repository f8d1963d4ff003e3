import { context, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { Metrics, traceExemplar } from './metrics';

/** Blocks the event loop for `ms` (what a long synchronous step in a handler does). */
function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `read` until `ok` holds (a loaded machine runs the sampler's timer late), at most 10 s. */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > deadline) return v;
    await tick(10);
  }
}

async function delaySamples(metrics: Metrics): Promise<{ count: number; over100ms: number }> {
  const values = (await metrics.eventLoopDelay.get()).values;
  const count = values.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
  const upTo100 = values.find((v) => v.metricName?.endsWith('_bucket') && v.labels.le === 0.1)?.value ?? 0;
  return { count, over100ms: count - upTo100 };
}

describe('Metrics.monitorEventLoop', () => {
  it('records how late the loop ran: a loop blocked for 150 ms shows as a sample over 100 ms', async () => {
    const metrics = new Metrics('test');
    const stop = metrics.monitorEventLoop(10);
    try {
      const before = await until(
        () => delaySamples(metrics),
        (d) => d.count >= 3,
      );
      expect(before.count).toBeGreaterThanOrEqual(3);

      block(150);
      const after = await until(
        () => delaySamples(metrics),
        (d) => d.over100ms > before.over100ms,
      );
      expect(after.over100ms - before.over100ms).toBeGreaterThanOrEqual(1);
      expect((await metrics.expose()).body).toMatch(
        /^switchboard_event_loop_delay_seconds_bucket\{le="0.05"/m,
      );
    } finally {
      stop();
    }
    const stopped = (await delaySamples(metrics)).count;
    await tick(50);
    expect((await delaySamples(metrics)).count).toBe(stopped);
  });
});

describe('exemplars', () => {
  const provider = new BasicTracerProvider();
  const tracer = provider.getTracer('metrics-spec');
  let contextManager: AsyncLocalStorageContextManager;
  beforeAll(() => {
    contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
  });
  afterAll(() => {
    context.disable();
  });

  it("links a turn's duration observed inside an active span to its trace, in OpenMetrics only", async () => {
    const metrics = new Metrics('test');
    const ids = tracer.startActiveSpan('turn', (span) => {
      metrics.turnDuration.observe({
        labels: { status: 'completed' },
        value: 0.3,
        exemplarLabels: traceExemplar(),
      });
      span.end();
      return span.spanContext();
    });

    const open = await metrics.expose(
      'application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5',
    );
    expect(open.contentType).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
    // The 0.5 s bucket (the first to hold 0.3) carries the exemplar: its trace, span, value and time.
    expect(open.body).toMatch(
      new RegExp(
        `^switchboard_turn_duration_seconds_bucket\\{le="0.5",service="test",status="completed"\\} 1 # \\{trace_id="${ids.traceId}",span_id="${ids.spanId}"\\} 0.3 \\d+`,
        'm',
      ),
    );
    expect(open.body.endsWith('# EOF\n')).toBe(true);

    // Plain Prometheus scrapes keep the text format, without exemplars (which it cannot parse).
    const text = await metrics.expose('text/plain');
    expect(text.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(text.body).toMatch(
      /^switchboard_turn_duration_seconds_bucket\{le="0.5",service="test",status="completed"\} 1$/m,
    );
    expect(text.body).not.toContain('trace_id');
    expect((await metrics.expose()).body).not.toContain('# EOF');
  });

  it('names counters as each format does, whichever was rendered before', async () => {
    const metrics = new Metrics('test');
    metrics.turns.inc({ status: 'completed' });
    const open = (await metrics.expose('application/openmetrics-text')).body;
    expect(open).toMatch(/^# TYPE switchboard_turns counter$/m);
    expect(open).toMatch(/^switchboard_turns_total\{status="completed",service="test"\} 1$/m);
    // prom-client's own OpenMetrics rendering renames its counters for good; this one does not.
    const text = (await metrics.expose()).body;
    expect(text).toMatch(/^# TYPE switchboard_turns_total counter$/m);
    expect(text).toMatch(/^switchboard_turns_total\{status="completed",service="test"\} 1$/m);
  });

  it('leaves an observation outside a span, or in an unsampled one, without an exemplar', async () => {
    const metrics = new Metrics('test');
    metrics.turnDuration.observe({ labels: { status: 'failed' }, value: 2, exemplarLabels: traceExemplar() });
    const unsampled = trace.wrapSpanContext({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.NONE,
    });
    expect(traceExemplar(unsampled)).toEqual({});
    metrics.httpRequests.observe({
      labels: { method: 'GET', route: '/v1/agents', status_code: '200' },
      value: 0.01,
      exemplarLabels: traceExemplar(unsampled),
    });
    const open = (await metrics.expose('application/openmetrics-text')).body;
    expect(open).toMatch(/^switchboard_turn_duration_seconds_count\{service="test",status="failed"\} 1$/m);
    expect(open).not.toContain('trace_id');
  });
});
