import {
  context,
  propagation,
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

/** Runs `fn` inside a span; records failures and always ends the span. */
export async function withSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; parent?: TraceCarrier },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
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
