import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';
import type { TraceCarrier } from '@switchboard/contracts';

export const tracer = () => trace.getTracer('switchboard');

/** The active trace context as a W3C carrier, to put into job data or a database row. */
export function currentTraceCarrier(): TraceCarrier {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return { traceparent: carrier.traceparent, tracestate: carrier.tracestate };
}

export function currentTraceId(): string | undefined {
  return trace.getSpan(context.active())?.spanContext().traceId;
}

/** The span the API makes when nothing records: no ids, every method a no-op. */
const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * True when no tracer provider is registered (OpenTelemetry not started: no exporter configured,
 * docs/adr/0072) and nothing could give a span an id: no propagator to extract a parent, no span in
 * the active context. A span started then would be the API's no-op one, with the same invalid ids.
 */
function tracingOff(parent: TraceCarrier | undefined): boolean {
  const provider = trace.getTracerProvider();
  return (
    provider instanceof ProxyTracerProvider &&
    provider.getDelegateTracer('switchboard') === undefined &&
    (parent === undefined || propagation.fields().length === 0) &&
    trace.getSpan(context.active()) === undefined
  );
}

/**
 * Runs `fn` inside a span; records failures and always ends the span. With tracing off, `fn` runs
 * with the no-op span directly: the API would make one anyway, through a context, a tracer lookup
 * and a wrapper promise per call, several times per turn in every process (issue 37).
 */
export async function withSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; parent?: TraceCarrier },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (tracingOff(options.parent)) return fn(NO_SPAN);
  const parentCtx = options.parent
    ? propagation.extract(ROOT_CONTEXT, { ...options.parent })
    : context.active();
  return tracer().startActiveSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes },
    parentCtx,
    async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

export { SpanKind };
