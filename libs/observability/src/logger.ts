import { context, trace } from '@opentelemetry/api';
import pino, { type Logger } from 'pino';

/** Paths whose values never reach a log line. */
export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'req.headers.authorization',
  'req.headers["x-admin-token"]',
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'password',
  '*.password',
];

/** JSON logs carrying the active trace and span ids. */
export function createLogger(options: { service: string; level?: string }): Logger {
  return pino({
    name: options.service,
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { service: options.service },
    mixin() {
      const span = trace.getSpan(context.active());
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
  });
}

export type { Logger };
