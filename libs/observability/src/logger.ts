import { context, isSpanContextValid, trace } from '@opentelemetry/api';
import pino, { type Logger } from 'pino';

/** Paths whose values never reach a log line. */
export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'req.headers.authorization',
  'req.headers["x-admin-token"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'password',
  '*.password',
];

/** One appending stream per log file, shared by every logger of the process that writes there. */
const files = new Map<string, pino.DestinationStream>();

/** JSON logs carrying the active trace and span ids. */
export function createLogger(options: {
  service: string;
  level?: string;
  /** Where lines go; stdout when absent. */
  destination?: pino.DestinationStream;
  /** A file the lines are appended to (LOG_FILE), when no `destination` is given. */
  file?: string;
}): Logger {
  const opts: pino.LoggerOptions = {
    name: options.service,
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { service: options.service },
    mixin() {
      const span = trace.getSpan(context.active());
      if (!span || !isSpanContextValid(span.spanContext())) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
  };
  const file = options.file;
  let destination = options.destination;
  if (!destination && file) {
    destination = files.get(file) ?? pino.destination({ dest: file, append: true, mkdir: true, sync: true });
    files.set(file, destination);
  }
  return destination ? pino(opts, destination) : pino(opts);
}

/** The trace id of a W3C trace context carrier (a job's `trace`), for logs outside its span. */
export function traceIdOf(carrier?: { traceparent?: string }): string | undefined {
  const match = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/.exec(carrier?.traceparent ?? '');
  return match && !/^0+$/.test(match[1]) ? match[1] : undefined;
}

export type { Logger };
