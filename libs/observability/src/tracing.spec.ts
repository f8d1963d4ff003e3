import { context, propagation, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { withSpan } from './tracing';

const PARENT = {
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
};

describe('withSpan', () => {
  afterEach(() => {
    trace.disable();
    propagation.disable();
    context.disable();
  });

  it('with nothing registered runs fn with a no-op span of invalid ids, and passes on its result and errors', async () => {
    let seen: Span | undefined;
    await expect(
      withSpan('op', { parent: PARENT }, async (span) => {
        seen = span;
        return 42;
      }),
    ).resolves.toBe(42);
    expect(seen!.isRecording()).toBe(false);
    expect(trace.isSpanContextValid(seen!.spanContext())).toBe(false);
    await expect(
      withSpan('op', {}, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
  });

  it('with a propagator but no tracer takes the parent ids from the carrier, as the API does', async () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const traceId = await withSpan('op', { parent: PARENT }, async (span) => span.spanContext().traceId);
    expect(traceId).toBe('0af7651916cd43dd8448eb211c80319c');
  });

  it('with a tracer provider records the span, under the parent, and its failure', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    await withSpan('ok', { parent: PARENT }, async (span) => {
      expect(trace.getSpan(context.active())).toBe(span);
    });
    await expect(
      withSpan('fails', {}, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(['ok', 'fails']);
    expect(spans[0].spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(spans[1].status.code).toBe(2);
  });
});
