/**
 * Starts OpenTelemetry. Every app imports this module first, before Nest or any
 * instrumented library is loaded, so HTTP, pg, ioredis and friends are patched.
 */
import { NodeSDK } from '@opentelemetry/sdk-node';
import { getNodeAutoInstrumentations } from '@opentelemetry/auto-instrumentations-node';
import { AlwaysOffSampler, NoopSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { defaultServiceName } from './service-name';

let sdk: NodeSDK | undefined;

const hasEndpoint = Boolean(
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
);
/**
 * Tracing is configured: a collector, or the operator's explicit exporter (`none` included: trace
 * ids in logs and jobs, nothing recorded) or sampler. With none of them nothing starts — no context
 * manager (an active AsyncLocalStorage taxes every promise of the process), no instrumentation, no
 * span processor — so telemetry with no exporter costs nothing (SPEC §13, docs/adr/0072): spans are
 * the API's no-ops, logs carry no trace ids, jobs no trace context.
 */
const configured =
  hasEndpoint ||
  process.env.OTEL_TRACES_EXPORTER !== undefined ||
  process.env.OTEL_TRACES_SAMPLER !== undefined;

if (process.env.OTEL_SDK_DISABLED !== 'true' && configured) {
  process.env.OTEL_TRACES_EXPORTER ??= hasEndpoint ? 'otlp' : 'none';
  process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  // Exporting nothing (OTEL_TRACES_EXPORTER=none): trace ids only. With no span processor the SDK registers no tracer provider at all, and every span (hence
  // every trace id in logs and jobs) would be empty: a processor that drops spans keeps the ids.
  // Spans nobody exports are not recorded either: the always-off sampler makes every span a
  // non-recording one that still carries a trace id (the parent's, or a new one) and propagates it,
  // so logs and jobs keep their ids at a fraction of the cost (docs/BENCHMARKS.md). An explicit
  // OTEL_TRACES_SAMPLER wins.
  const exportsNothing = process.env.OTEL_TRACES_EXPORTER === 'none';
  // Only the libraries SPEC §12 traces (BullMQ and GenAI spans are our own, libs/queue and
  // libs/turns): getNodeAutoInstrumentations would otherwise patch about 40. Exporting nothing,
  // only the ones that carry trace context across processes (http in, undici out): pg and ioredis
  // spans would start no trace and carry none, and their wrappers were 2–3% of each process's CPU
  // (docs/BENCHMARKS.md, issue 22). The operator's own OTEL_NODE_ENABLED_INSTRUMENTATIONS /
  // OTEL_NODE_DISABLED_INSTRUMENTATIONS still apply.
  process.env.OTEL_NODE_ENABLED_INSTRUMENTATIONS ??= exportsNothing
    ? 'http,undici'
    : 'http,undici,pg,ioredis';
  sdk = new NodeSDK({
    ...(process.env.OTEL_SERVICE_NAME ? {} : { serviceName: defaultServiceName() }),
    ...(exportsNothing
      ? {
          spanProcessors: [new NoopSpanProcessor()],
          sampler: process.env.OTEL_TRACES_SAMPLER ? undefined : new AlwaysOffSampler(),
        }
      : {}),
    instrumentations: [
      getNodeAutoInstrumentations({
        // A statement outside any traced operation (pool upkeep, start-up) is not worth a trace of
        // its own; the pool's connect spans add nothing to the query spans. ioredis already
        // requires a parent by default, which keeps BullMQ's polling out of traces.
        '@opentelemetry/instrumentation-pg': { requireParentSpan: true, ignoreConnectSpans: true },
        '@opentelemetry/instrumentation-ioredis': { requireParentSpan: true },
      }),
    ],
  });
  sdk.start();
}

export async function shutdownTelemetry(): Promise<void> {
  await sdk?.shutdown().catch(() => undefined);
}
