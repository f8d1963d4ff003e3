/**
 * Starts OpenTelemetry. Every app imports this module first, before Nest or any
 * instrumented library is loaded, so HTTP, pg, ioredis and friends are patched.
 */
import { NodeSDK } from '@opentelemetry/sdk-node';
import { getNodeAutoInstrumentations } from '@opentelemetry/auto-instrumentations-node';
import { NoopSpanProcessor } from '@opentelemetry/sdk-trace-base';

let sdk: NodeSDK | undefined;

if (process.env.OTEL_SDK_DISABLED !== 'true') {
  // Without a collector configured, keep tracing on (ids in logs, context in jobs) but export nothing.
  const hasEndpoint = Boolean(
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
  );
  process.env.OTEL_TRACES_EXPORTER ??= hasEndpoint ? 'otlp' : 'none';
  process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  // With no span processor the SDK registers no tracer provider at all, and every span (hence
  // every trace id in logs and jobs) would be empty: a processor that drops spans keeps the ids.
  const exportsNothing = process.env.OTEL_TRACES_EXPORTER === 'none';
  sdk = new NodeSDK({
    ...(exportsNothing ? { spanProcessors: [new NoopSpanProcessor()] } : {}),
    instrumentations: [
      getNodeAutoInstrumentations({
        '@opentelemetry/instrumentation-fs': { enabled: false },
        '@opentelemetry/instrumentation-dns': { enabled: false },
        '@opentelemetry/instrumentation-net': { enabled: false },
      }),
    ],
  });
  sdk.start();
}

export async function shutdownTelemetry(): Promise<void> {
  await sdk?.shutdown().catch(() => undefined);
}
